#!/bin/bash
# Alternating runs at N = 100,000: old (b366a02) vs new (9fe1a88), and new with a per-target
# limit that never binds (the gates' cost). One corral-target (the new build's) for all.
# Every invocation is bounded by `timeout`.
set -u
cd /work/main
OUT=/tmp/bench-out
LOG=$OUT/driver.log
SP="--instances 100000 --systems corral --steady 30 --quiet-wait 5 --retry-disturbed 0"
II="--instances 100000 --interval 60 --no-floor --quiet-wait 5 --retry-disturbed 0"
run() {  # label, timeout, command...
  local label=$1 to=$2; shift 2
  echo "=== $(date +%H:%M:%S) $label: $(uptime)" >> $LOG
  echo "    $*" >> $LOG
  timeout --signal=TERM --kill-after=60 "$to" "$@" >> $OUT/$label.log 2>&1
  echo "    rc=$? at $(date +%H:%M:%S); after: $(uptime)" >> $LOG
}
seed() {
  case $1 in
    old) run seed-old 400 bench/seed-polling $SP --bin /tmp/bench-bin/old --out $OUT/seed-old ;;
    new) run seed-new 400 bench/seed-polling $SP --bin /tmp/bench-bin/new --out $OUT/seed-new ;;
    lim) run seed-lim 400 bench/seed-polling $SP --limits '{"max_in_flight": 1000000}' --bin /tmp/bench-bin/new --out $OUT/seed-lim ;;
  esac
}
for order in "old new lim" "lim old new" "new lim old"; do
  for v in $order; do seed $v; done
done
for order in "old new" "new old" "old new"; do
  for v in $order; do run idle-$v 600 bench/idle-instances $II --bin /tmp/bench-bin/$v --out $OUT/idle-$v; done
done
echo "=== done $(date +%H:%M:%S)" >> $LOG
