#!/bin/bash
# Follow-up: N = 10,000 every 5 s, old vs new (start_spread default) vs new with start_spread 0s,
# alternating; then one perf run of each (perf stat + perf record on the daemon's processes).
set -u
cd /work/wt-bench
LOG=/tmp/bench-out/driver.log
SP="--instances 10000 --systems corral --steady 30 --quiet-wait 5 --retry-disturbed 0"
run() {
  local label=$1 to=$2; shift 2
  echo "=== $(date +%H:%M:%S) $label: $(uptime)" >> $LOG
  echo "    $*" >> $LOG
  timeout --signal=TERM --kill-after=60 "$to" "$@" >> /tmp/bench-out/$label.log 2>&1
  echo "    rc=$? at $(date +%H:%M:%S); after: $(uptime)" >> $LOG
}
one() {
  case $1 in
    old)  run seed10k-old  300 bench/seed-polling $SP --bin /tmp/bench-bin/old --out /tmp/bench-out/seed10k-old ;;
    new)  run seed10k-new  300 bench/seed-polling $SP --bin /tmp/bench-bin/new --out /tmp/bench-out/seed10k-new ;;
    new0) run seed10k-new0 300 bench/seed-polling $SP --start-spread 0s --bin /tmp/bench-bin/new --out /tmp/bench-out/seed10k-new0 ;;
  esac
}
if [ "${1:-all}" != perf ]; then
  for order in "old new new0" "new0 old new" "new new0 old"; do
    for v in $order; do one $v; done
  done
fi
# perf: the script runs with a 60 s steady window; perf attaches 28 s after start, to the daemon's
# processes (descendants of the script), for 15 s of perf stat then 20 s of perf record.
for v in new0 old new; do
  extra=""; bin=$v
  [ $v = new0 ] && { extra="--start-spread 0s"; bin=new; }
  echo "=== $(date +%H:%M:%S) perf-$v: $(uptime)" >> $LOG
  timeout 300 bench/seed-polling --instances 10000 --systems corral --steady 60 --quiet-wait 5 --retry-disturbed 0 \
     $extra --bin /tmp/bench-bin/$bin --out /tmp/bench-out/perf-$v >> /tmp/bench-out/perf-$v.log 2>&1 &
  spid=$!
  sleep 30
  all=$(python3 -c "
import sys; sys.path.insert(0,'bench/lib'); import benchlib as B
out=[]
for p in B.descendants($spid):
    try:
        if open(f'/proc/{p}/exe'.replace('exe','cmdline'),'rb').read().split(b'\0')[0].endswith(b'corral'): out.append(p)
    except OSError: pass
print(','.join(map(str,out)))")
  echo "    corral pids: $all" >> $LOG
  ps -o pid,ppid,comm,args -p ${all//,/ } >> /tmp/bench-out/perf-$v.log 2>&1
  timeout 40 perf stat -e task-clock,context-switches,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,raw_syscalls:sys_enter \
       --per-thread -p $all -o /tmp/bench-out/perf-$v.stat -- sleep 15
  timeout 40 perf record -F 999 -g -p $all -o /tmp/bench-out/perf-$v.data -- sleep 20 >> /tmp/bench-out/perf-$v.log 2>&1
  wait $spid
  echo "    done at $(date +%H:%M:%S); after: $(uptime)" >> $LOG
done
echo "=== driver2 done $(date +%H:%M:%S)" >> $LOG
