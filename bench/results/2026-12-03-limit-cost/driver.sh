#!/bin/bash
# The cost of a per-target limit that never binds, at N = 100,000 polling every 5 s: one build
# (copied to /tmp/bench-bin/cur first), without a limit ("none") and with
# '{"max_in_flight": 1000000}' ("lim"), alternating, three runs each. Every invocation is
# bounded by `timeout`. Run from the repository's root; results go to $OUT.
set -u
OUT=${OUT:-/tmp/bench-limit-cost}
BIN=${BIN:-/tmp/bench-bin/cur}
mkdir -p "$OUT"
LOG=$OUT/driver.log
SP="--instances 100000 --systems corral --steady 30 --quiet-wait 5 --retry-disturbed 0 --bin $BIN"
run() {  # label
  echo "=== $(date +%H:%M:%S) $1: $(uptime)" >> "$LOG"
  case $1 in
    none) timeout --kill-after=60 400 bench/seed-polling $SP --out "$OUT/none" >> "$OUT/none.log" 2>&1 ;;
    lim) timeout --kill-after=60 400 bench/seed-polling $SP --limits '{"max_in_flight": 1000000}' \
           --out "$OUT/lim" >> "$OUT/lim.log" 2>&1 ;;
  esac
  echo "    rc=$? at $(date +%H:%M:%S)" >> "$LOG"
}
for order in "none lim" "lim none" "none lim"; do
  for v in $order; do run $v; done
done
echo "=== done $(date +%H:%M:%S)" >> "$LOG"
