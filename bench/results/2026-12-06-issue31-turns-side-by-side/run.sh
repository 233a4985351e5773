#!/bin/bash
# before = 7795d00 (the start of this session), head = the session's code; HEAD's scripts for both.
cd /work/main
B=/tmp/wt-before/build/bin; H=/work/main/build/bin
n=0
for pair in 1 2; do
  for which in before head; do
    n=$((n+1)); bin=$B; [ $which = head ] && bin=$H
    echo "== seed-polling $which $n $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    bench/seed-polling --instances 100000 --systems corral --steady 30 --quiet-wait 5 \
      --retry-disturbed 0 --bin $bin --out /tmp/sbs2/seed-$which-$n 2>&1 | tail -6
  done
done
for which in before head; do
  n=$((n+1)); bin=$B; [ $which = head ] && bin=$H
  echo "== soak $which $n $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  bench/soak --duration 300 --bin $bin --out /tmp/sbs2/soak-$which-$n 2>&1 | tail -25
done
echo "== done $(date +%T)"
