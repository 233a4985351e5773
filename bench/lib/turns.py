"""The turns of one thread's event loop, from a `perf record` of the scheduler's switches and of
its epoll_wait calls (bench/master-stalls --perf-sched records both).

A turn is what the loop does between two polls: from the return of one epoll_wait to the next
call. For each turn: how long it took, how much of that the thread was on a CPU, and, while it
was runnable but off a CPU, which threads ran instead. What a turn's CPU time says is how long
the loop's own work keeps a request waiting; what its waits say is who it waited behind.
"""
import collections
import re
import subprocess

LINE = re.compile(r"\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)")
SWITCH = re.compile(r"prev_pid=(\d+).*prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)")


def events(perf_data):
    out = subprocess.run(["perf", "script", "-i", perf_data, "-F", "comm,tid,cpu,time,event,trace"],
                         capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            comm, tid, cpu, t, event, rest = m.groups()
            yield comm, tid, int(cpu), float(t), event, rest


def summary(perf_data, tid):
    tid = str(tid)
    turns = []          # (start, wall s, on-CPU s)
    start = on_since = None
    on_cpu = 0.0
    waited_since = None  # the thread was switched out runnable at this time
    waits = []           # (from, to)
    running = collections.defaultdict(list)  # cpu -> [(time, "comm/pid")]
    for comm, who, cpu, t, event, rest in events(perf_data):
        if event == "sched:sched_switch":
            m = SWITCH.search(rest)
            if not m:
                continue
            prev, state, next_comm, next_pid = m.groups()
            running[cpu].append((t, f"{next_comm}/{next_pid}"))
            if prev == tid:
                if start is not None and on_since is not None:
                    on_cpu += t - on_since
                on_since = None
                waited_since = t if state.startswith("R") else None
            elif next_pid == tid:
                on_since = t
                if waited_since is not None:
                    waits.append((waited_since, t))
                waited_since = None
        elif who == tid and "epoll" in event:
            if "exit" in event:
                start, on_cpu, on_since = t, 0.0, t
            elif start is not None:
                if on_since is not None:
                    on_cpu += t - on_since
                turns.append((start, t - start, on_cpu))
                start = None
    return {"turns": describe_turns(turns), "waits": describe_waits(waits, running)}


def describe_turns(turns):
    if not turns:
        return {"count": 0}
    cpu = sorted(c for _, _, c in turns)
    longest = sorted(turns, key=lambda x: -x[2])[:10]
    return {"count": len(turns),
            "on_cpu_ms_p50": round(cpu[len(cpu) // 2] * 1e3, 2),
            "on_cpu_ms_p99": round(cpu[int(len(cpu) * 0.99)] * 1e3, 2),
            "on_cpu_ms_max": round(cpu[-1] * 1e3, 2),
            "over_3_ms_on_cpu": sum(1 for c in cpu if c > 0.003),
            "longest": [{"at": round(s, 4), "wall_ms": round(w * 1e3, 2),
                         "on_cpu_ms": round(c * 1e3, 2)} for s, w, c in longest]}


def describe_waits(waits, running):
    ran = collections.Counter()
    for a, b in sorted(waits, key=lambda w: w[0] - w[1])[:300]:  # the 300 longest
        for timeline in running.values():
            for (t, who), (t_next, _) in zip(timeline, timeline[1:]):
                overlap = min(t_next, b) - max(t, a)
                if overlap > 0 and not who.startswith("swapper"):
                    ran[who] += overlap
    return {"count": len(waits),
            "total_ms": round(sum(b - a for a, b in waits) * 1e3, 1),
            "longest_ms": round(max((b - a for a, b in waits), default=0) * 1e3, 2),
            "ran_meanwhile_ms": {k: round(v * 1e3, 1) for k, v in ran.most_common(8)}}
