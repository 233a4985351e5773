#!/bin/bash
cd /work/main
B=/work/wt-4b6/build/bin
H=/work/side-head/bin
L=/tmp/side/driver.log
run() {
  local name=$1 build=$2 bin=$3; shift 3
  echo "$(date -u +%T) start $name-$build load: $(cut -d' ' -f1-3 /proc/loadavg)" >> $L
  "$@" --bin $bin --out /tmp/side/$name-$build > /tmp/side/$name-$build.stdout 2> /tmp/side/$name-$build.stderr
  echo "$(date -u +%T) end $name-$build rc=$? load: $(cut -d' ' -f1-3 /proc/loadavg)" >> $L
}
run seed-3 head $H bench/seed-polling --instances 100000 --systems corral --steady 30 --quiet-wait 5 --retry-disturbed 0
run seed-3 before $B bench/seed-polling --instances 100000 --systems corral --steady 30 --quiet-wait 5 --retry-disturbed 0
echo "$(date -u +%T) all done 3" >> $L
