#!/bin/bash
# Alternating runs, old (571b9aa) vs new (b366a02) corral; one corral-target (the new build's) for both.
# Every invocation is bounded by `timeout`; everything they start runs in its own process group.
set -u
cd /work/wt-bench
LOG=/tmp/bench-out/driver.log
SP="--instances 10000,100000 --systems corral --steady 30 --quiet-wait 5 --retry-disturbed 0"
II="--instances 100000 --interval 60 --no-floor --quiet-wait 5 --retry-disturbed 0"
run() {  # label, timeout, command...
  local label=$1 to=$2; shift 2
  echo "=== $(date +%H:%M:%S) $label: $(uptime)" >> $LOG
  echo "    $*" >> $LOG
  timeout --signal=TERM --kill-after=60 "$to" "$@" >> /tmp/bench-out/$label.log 2>&1
  echo "    rc=$? at $(date +%H:%M:%S); after: $(uptime)" >> $LOG
}
phase=${1:-all}
if [ "$phase" = all ] || [ "$phase" = seed ]; then
  for order in "old new" "new old" "old new"; do
    for v in $order; do
      run seed-$v 600 bench/seed-polling $SP --bin /tmp/bench-bin/$v --out /tmp/bench-out/seed-$v
    done
  done
fi
if [ "$phase" = all ] || [ "$phase" = idle ]; then
  for order in "old new new0" "new0 old new" "new new0 old"; do
    for v in $order; do
      case $v in
        old)  run idle-old  600 bench/idle-instances $II --bin /tmp/bench-bin/old --out /tmp/bench-out/idle-old ;;
        new)  run idle-new  600 bench/idle-instances $II --bin /tmp/bench-bin/new --out /tmp/bench-out/idle-new ;;
        new0) run idle-new0 600 bench/idle-instances $II --start-spread 0s --bin /tmp/bench-bin/new --out /tmp/bench-out/idle-new0 ;;
      esac
    done
  done
fi
echo "=== done $(date +%H:%M:%S)" >> $LOG
