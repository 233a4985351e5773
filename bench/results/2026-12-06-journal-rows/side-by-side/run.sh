#!/bin/sh
# Journal rows, entries of 64 growing at once to 2,048 (mapped on their own) (rows4), against
# the code before the rows (before, cd62304's parent's build: 97692cf).
cd /work/main
for round in 1 2; do
  for v in before rows4; do
    bench/master-stalls --skip idle --polling 5 --repeat 3 --bin /tmp/bin-$v \
      --out /tmp/rows-sbs5 --name $v-$round 2>&1 | tail -10
  done
done
