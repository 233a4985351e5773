#!/usr/bin/env python3
"""Medians and side-by-side ratios of the re-run (old 571b9aa vs new b366a02)."""
import glob, json, statistics, sys

def load(label, name):
    runs = []
    # run from the repository's root; during the runs the files were in /tmp/bench-out/<label>/
    d0 = "bench/results/2026-12-03-rerun"
    for p in sorted(glob.glob(f"{d0}/{name}-{label}.json") + glob.glob(f"{d0}/{label}.json")):
        d = json.load(open(p))
        for r in d["runs"]:
            r["_inv_cmd"] = d["invocations"][r.get("invocation", 0)]["command"]
            runs.append(r)
    return runs

def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None

def g(r, *path):
    for p in path:
        if r is None: return None
        r = r.get(p) if isinstance(r, dict) else None
    return r

def f(v, d=2):
    if v is None: return "–"
    if isinstance(v, float): return f"{v:,.{d}f}"
    return f"{v:,}"

def seed():
    out = {}
    for v in ("old", "new"):
        out[v] = [r for r in load(f"seed-{v}", "seed-polling") if r["system"] == "corral"]
    print("## seed-polling, every run")
    print("| binary | N | run | started | load before | other CPU burst/steady | all running after | burst p99/max ms | steady p50/p99/max ms (unans./probes) | steady cores | µs CPU per poll | peak RSS MB | polls/s (%) | disturbed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in (10000, 100000):
        for v in ("old", "new"):
            for i, r in enumerate([r for r in out[v] if r["instances"] == n]):
                if r.get("error"):
                    print(f"| {v} | {n:,} | {i+1} | ERROR {r['error'][:200]} |"); continue
                s, b = r["windows"]["steady"], r["windows"]["burst"]
                cpp = s["cpu_cores"] / s["polls_per_s"] * 1e6 if s["polls_per_s"] else None
                print(f"| {v} | {n:,} | {i+1} | {r['started_at'][11:]} | {r['loadavg_before'].split()[0]} | {b['other_cpu_cores']}/{s['other_cpu_cores']} | "
                      f"{r['all_running_after_s']} s | {b['latency']['p99_ms']}/{b['latency']['max_ms']} | "
                      f"{s['latency']['p50_ms']}/{s['latency']['p99_ms']}/{s['latency']['max_ms']} ({s['latency']['unanswered']}/{s['latency']['probes']}) | "
                      f"{s['cpu_cores']} | {f(cpp,1)} | {s['peak_rss_mb']} | {s['polls_per_s']:,.0f} ({100*s['polls_fraction']:.1f}%) | {'yes' if r.get('disturbed') else 'no'} |")
    print()
    print("## seed-polling, medians and ratios new/old (pairs of the same repeat)")
    print("| N | binary | runs | steady cores | µs CPU per poll | peak RSS MB | steady p50 / p99 / max ms | burst max ms | polls/s (%) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in (10000, 100000):
        rows = {}
        for v in ("old", "new"):
            rs = [r for r in out[v] if r["instances"] == n and not r.get("error")]
            rows[v] = rs
            cpp = [r["windows"]["steady"]["cpu_cores"] / r["windows"]["steady"]["polls_per_s"] * 1e6 for r in rs]
            S = lambda *p: med([g(r, "windows", *p) for r in rs])
            print(f"| {n:,} | {v} | {len(rs)} | {f(S('steady','cpu_cores'),3)} | {f(med(cpp),1)} | {f(S('steady','peak_rss_mb'),1)} | "
                  f"{f(S('steady','latency','p50_ms'))} / {f(S('steady','latency','p99_ms'))} / {f(S('steady','latency','max_ms'))} | "
                  f"{f(S('burst','latency','max_ms'))} | {f(S('steady','polls_per_s'),0)} ({100*S('steady','polls_fraction'):.1f}%) |")
        pairs = list(zip(rows["old"], rows["new"]))
        def q(fn):
            v = [fn(b) / fn(a) for a, b in pairs if fn(a)]
            return med(v), [round(x, 3) for x in v]
        cpp = lambda r: r["windows"]["steady"]["cpu_cores"] / r["windows"]["steady"]["polls_per_s"]
        print(f"|  N={n:,} ratios new/old | per pair: CPU per poll {q(cpp)}, RSS {q(lambda r: r['windows']['steady']['peak_rss_mb'])}, "
              f"RSS above baseline {q(lambda r: r['windows']['steady']['peak_rss_mb'] - r['windows']['baseline']['peak_rss_mb'])}, "
              f"steady p99 {q(lambda r: r['windows']['steady']['latency']['p99_ms'])}, polls/s {q(lambda r: r['windows']['steady']['polls_per_s'])} |")
    print()

def idle():
    out = {v: load(f"idle-{v}", "idle-instances") for v in ("old", "new", "new0")}
    name = {"old": "old 571b9aa", "new": "new b366a02, start_spread default", "new0": "new b366a02, start_spread 0s"}
    print("## idle-instances, every run")
    print("| binary | run | started | load before | other CPU steady | all running after | steady p50/p99/max ms (unans.) | cores | µs CPU per poll | peak RSS MB | RSS/instance (above baseline) | PSS/instance | polls/s (%) | settle polls/s (%) | 1 s buckets steady max/mean (p99/mean) | settle max/mean | disturbed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for v in ("old", "new", "new0"):
        for i, r in enumerate(out[v]):
            if r.get("error"):
                print(f"| {name[v]} | {i+1} | ERROR {r['error'][:200]} |"); continue
            s, d, st = r["windows"]["steady"], r["derived"], r["windows"]["settle"]
            pr = r.get("poll_rate_1s") or {}
            print(f"| {name[v]} | {i+1} | {r['started_at'][11:]} | {r['loadavg_before'].split()[0]} | {s['other_cpu_cores']} | {r['all_running_after_s']} s | "
                  f"{s['latency']['p50_ms']}/{s['latency']['p99_ms']}/{s['latency']['max_ms']} ({s['latency']['unanswered']}) | {s['cpu_cores']} | {d['cpu_us_per_poll']} | "
                  f"{s['peak_rss_mb']} | {d['rss_per_instance_bytes']:.0f} B ({d['rss_above_baseline_per_instance_bytes']:.0f} B) | {d['pss_per_instance_bytes']:.0f} B | "
                  f"{s['polls_per_s']:,.0f} ({100*s['polls_fraction']:.1f}%) | {st['polls_per_s']:,.0f} ({100*st['polls_fraction']:.1f}%) | "
                  f"{g(pr,'steady','max_over_mean')} ({g(pr,'steady','p99_over_mean')}) | {g(pr,'settle','max_over_mean')} | {'yes' if r.get('disturbed') else 'no'} |")
    print()
    print("## idle-instances, medians")
    print("| binary | runs | RSS/instance | above baseline | PSS/instance | cores | µs CPU per poll | steady p50/p99/max ms | polls/s (%) | steady buckets max/mean | p99/mean | settle max/mean |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for v in ("old", "new", "new0"):
        rs = [r for r in out[v] if not r.get("error")]
        D = lambda k: med([r["derived"][k] for r in rs])
        S = lambda *p: med([g(r, "windows", "steady", *p) for r in rs])
        P = lambda w, k: med([g(r, "poll_rate_1s", w, k) for r in rs])
        print(f"| {name[v]} | {len(rs)} | {f(D('rss_per_instance_bytes'),0)} B | {f(D('rss_above_baseline_per_instance_bytes'),0)} B | {f(D('pss_per_instance_bytes'),0)} B | "
              f"{f(D('cores'),3)} | {f(D('cpu_us_per_poll'),1)} | {f(S('latency','p50_ms'))}/{f(S('latency','p99_ms'))}/{f(S('latency','max_ms'))} | "
              f"{f(S('polls_per_s'),0)} ({100*(S('polls_fraction') or 0):.1f}%) | {f(P('steady','max_over_mean'))} | {f(P('steady','p99_over_mean'))} | {f(P('settle','max_over_mean'))} |")
    # pairs in run order
    print()
    for a, b in (("old", "new"), ("new0", "new"), ("old", "new0")):
        pa, pb = [r for r in out[a] if not r.get("error")], [r for r in out[b] if not r.get("error")]
        def q(fn):
            v = [fn(y) / fn(x) for x, y in zip(pa, pb) if fn(x)]
            return (round(med(v), 3) if v else None), [round(x, 3) for x in v]
        print(f"- ratio {b}/{a} per repeat: RSS/instance {q(lambda r: r['derived']['rss_per_instance_bytes'])}; "
              f"above baseline {q(lambda r: r['derived']['rss_above_baseline_per_instance_bytes'])}; PSS {q(lambda r: r['derived']['pss_per_instance_bytes'])}; "
              f"cores {q(lambda r: r['derived']['cores'])}; CPU/poll {q(lambda r: r['derived']['cpu_us_per_poll'])}; "
              f"steady p99 {q(lambda r: r['windows']['steady']['latency']['p99_ms'])}")

which = sys.argv[1] if len(sys.argv) > 1 else "all"
if which in ("all", "seed"): seed()
if which in ("all", "idle"): idle()

def seed10k():
    out = {v: [r for r in load(f"seed10k-{v}", "seed-polling") if r["system"] == "corral"] for v in ("old", "new", "new0")}
    name = {"old": "old 571b9aa", "new": "new b366a02, start_spread default", "new0": "new b366a02, start_spread 0s"}
    print("## seed-polling N=10,000 follow-up, every run")
    print("| binary | run | started | load before | other CPU burst/steady | steady p50/p99/max ms | steady cores | µs CPU per poll | peak RSS MB | polls/s (%) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for v in ("old", "new", "new0"):
        for i, r in enumerate(out[v]):
            if r.get("error"):
                print(f"| {name[v]} | {i+1} | ERROR {r['error'][:200]} |"); continue
            s, b = r["windows"]["steady"], r["windows"]["burst"]
            print(f"| {name[v]} | {i+1} | {r['started_at'][11:]} | {r['loadavg_before'].split()[0]} | {b['other_cpu_cores']}/{s['other_cpu_cores']} | "
                  f"{s['latency']['p50_ms']}/{s['latency']['p99_ms']}/{s['latency']['max_ms']} | {s['cpu_cores']} | {s['cpu_cores']/s['polls_per_s']*1e6:.1f} | "
                  f"{s['peak_rss_mb']} | {s['polls_per_s']:,.0f} ({100*s['polls_fraction']:.1f}%) |")
    print()
    print("| binary | runs | steady cores | µs CPU per poll | peak RSS MB | steady p50/p99/max ms | polls/s |")
    print("|---|---|---|---|---|---|---|")
    for v in ("old", "new", "new0"):
        rs = [r for r in out[v] if not r.get("error")]
        S = lambda *p: med([g(r, "windows", "steady", *p) for r in rs])
        cpp = med([r["windows"]["steady"]["cpu_cores"] / r["windows"]["steady"]["polls_per_s"] * 1e6 for r in rs])
        print(f"| {name[v]} | {len(rs)} | {f(S('cpu_cores'),3)} | {f(cpp,1)} | {f(S('peak_rss_mb'),1)} | {f(S('latency','p50_ms'))}/{f(S('latency','p99_ms'))}/{f(S('latency','max_ms'))} | {f(S('polls_per_s'),0)} |")
    print()
    for a, b in (("old", "new"), ("new0", "new"), ("old", "new0")):
        pa, pb = [r for r in out[a] if not r.get("error")], [r for r in out[b] if not r.get("error")]
        def q(fn):
            v = [fn(y) / fn(x) for x, y in zip(pa, pb) if fn(x)]
            return (round(med(v), 3) if v else None), [round(x, 3) for x in v]
        print(f"- ratio {b}/{a} per repeat: CPU/poll {q(lambda r: r['windows']['steady']['cpu_cores'] / r['windows']['steady']['polls_per_s'])}; "
              f"RSS {q(lambda r: r['windows']['steady']['peak_rss_mb'])}; steady p99 {q(lambda r: r['windows']['steady']['latency']['p99_ms'])}")

if which == "seed10k": seed10k()
