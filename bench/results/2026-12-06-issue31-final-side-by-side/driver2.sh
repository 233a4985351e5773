#!/bin/bash
# The second half of the side-by-side: seed-polling and soak (before = 4b60641, head = 2fd42ed).
cd /work/main
B=/work/wt-4b6/build/bin
H=/work/side-head/bin
L=/tmp/side/driver.log
run() {  # name build bin args...
  local name=$1 build=$2 bin=$3; shift 3
  echo "$(date -u +%T) start $name-$build load: $(cut -d' ' -f1-3 /proc/loadavg)" >> $L
  "$@" --bin $bin --out /tmp/side/$name-$build > /tmp/side/$name-$build.stdout 2> /tmp/side/$name-$build.stderr
  echo "$(date -u +%T) end $name-$build rc=$? load: $(cut -d' ' -f1-3 /proc/loadavg)" >> $L
}
for n in 1 2; do
  run seed-$n before $B bench/seed-polling --instances 100000 --systems corral --steady 30 --quiet-wait 5 --retry-disturbed 0
  run seed-$n head $H bench/seed-polling --instances 100000 --systems corral --steady 30 --quiet-wait 5 --retry-disturbed 0
done
for n in 1 2; do
  run soak-$n head $H bench/soak --duration 300
  run soak-$n before $B bench/soak --duration 300
done
echo "$(date -u +%T) all done" >> $L
