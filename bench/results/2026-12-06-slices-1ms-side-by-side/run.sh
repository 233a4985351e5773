#!/bin/bash
cd /work/main
for b in 2ms 1ms 2ms 1ms; do
  n=$((${n:-0}+1))
  echo "== master-stalls $b $n $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  bench/master-stalls --floor --repeat 3 --bin /tmp/bin$b --out /tmp/sbs/ms-$b-$n 2>&1 | tail -20
done
for b in 2ms 1ms 2ms 1ms; do
  n=$((n+1))
  echo "== idle 1M $b $n $(date +%T)"
  bench/idle-instances --instances 1000000 --no-floor --settle 5 --steady 5 --baseline 3 --quiet-wait 5 --retry-disturbed 0 --bin /tmp/bin$b --out /tmp/sbs/idle-$b-$n 2>&1 | tail -12
done
for b in 2ms 1ms; do
  n=$((n+1))
  echo "== rebalance $b $n $(date +%T)"
  bench/rebalance --bin /tmp/bin$b --out /tmp/sbs/reb-$b-$n 2>&1 | tail -12
done
echo "== done $(date +%T)"
