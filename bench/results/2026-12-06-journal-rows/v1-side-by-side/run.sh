#!/bin/sh
# Side by side: journal rows one entry per run of rows (rows) against af5a5cd+routes (before).
cd /work/main
for round in 1 2; do
  for v in before rows; do
    bench/master-stalls --skip idle,big --polling 5 --repeat 3 --bin /tmp/bin-$v \
      --out /tmp/rows-sbs2 --name $v-$round 2>&1 | tail -6
  done
done
