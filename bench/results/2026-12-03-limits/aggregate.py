#!/usr/bin/env python3
"""Medians and side-by-side ratios of the re-run at N = 100,000: old b366a02, new 9fe1a88, and
new with a per-target limit that never binds ("lim"). Run from the repository's root."""
import glob, json, statistics, sys

D0 = "bench/results/2026-12-03-limits"
NAME = {"old": "old b366a02", "new": "new 9fe1a88", "lim": "new 9fe1a88 + limit"}

def load(label, name):
    runs = []
    for p in sorted(glob.glob(f"{D0}/{name}-{label}.json")):
        runs += json.load(open(p))["runs"]
    return runs

def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None

def g(r, *path):
    for p in path:
        r = r.get(p) if isinstance(r, dict) else None
    return r

def f(v, d=2):
    if v is None: return "–"
    return f"{v:,.{d}f}" if isinstance(v, float) else f"{v:,}"

def ratios(pa, pb, fn):
    v = [fn(y) / fn(x) for x, y in zip(pa, pb) if fn(x)]
    return (round(med(v), 3) if v else None), [round(x, 3) for x in v]

def seed():
    out = {v: [r for r in load(f"seed-{v}", "seed-polling") if not r.get("error")] for v in NAME}
    cpp = lambda r: r["windows"]["steady"]["cpu_cores"] / r["windows"]["steady"]["polls_per_s"] * 1e6
    print("## seed-polling N=100,000 every 5 s, every run")
    print("| binary | run | started | load before | other CPU burst/steady | steady p50/p99/max ms | steady cores | µs CPU per poll | peak RSS MB | polls/s (%) | disturbed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for v in NAME:
        for i, r in enumerate(out[v]):
            s, b = r["windows"]["steady"], r["windows"]["burst"]
            print(f"| {NAME[v]} | {i+1} | {r['started_at'][11:]} | {r['loadavg_before'].split()[0]} | {b['other_cpu_cores']}/{s['other_cpu_cores']} | "
                  f"{s['latency']['p50_ms']}/{s['latency']['p99_ms']}/{s['latency']['max_ms']} | {s['cpu_cores']} | {cpp(r):.1f} | "
                  f"{s['peak_rss_mb']} | {s['polls_per_s']:,.0f} ({100*s['polls_fraction']:.1f}%) | {'yes' if r.get('disturbed') else 'no'} |")
    print()
    print("| binary | runs | steady cores | µs CPU per poll | peak RSS MB | steady p50/p99/max ms | polls/s |")
    print("|---|---|---|---|---|---|---|")
    for v in NAME:
        rs = out[v]
        S = lambda *p: med([g(r, "windows", "steady", *p) for r in rs])
        print(f"| {NAME[v]} | {len(rs)} | {f(S('cpu_cores'),3)} | {f(med([cpp(r) for r in rs]),1)} | {f(S('peak_rss_mb'),1)} | "
              f"{f(S('latency','p50_ms'))}/{f(S('latency','p99_ms'))}/{f(S('latency','max_ms'))} | {f(S('polls_per_s'),0)} |")
    print()
    for a, b in (("old", "new"), ("new", "lim")):
        print(f"- ratio {b}/{a} per repeat: CPU/poll {ratios(out[a], out[b], cpp)}; "
              f"RSS {ratios(out[a], out[b], lambda r: r['windows']['steady']['peak_rss_mb'])}; "
              f"steady p99 {ratios(out[a], out[b], lambda r: r['windows']['steady']['latency']['p99_ms'])}; "
              f"polls/s {ratios(out[a], out[b], lambda r: r['windows']['steady']['polls_per_s'])}")
    print()

def idle():
    out = {v: [r for r in load(f"idle-{v}", "idle-instances") if not r.get("error")] for v in ("old", "new")}
    print("## idle-instances N=100,000 every 60 s, every run")
    print("| binary | run | started | load before | other CPU steady | steady p50/p99/max ms | cores | µs CPU per poll | RSS/instance (above baseline) | PSS/instance | polls/s (%) | 1 s buckets max/mean (p99/mean) | disturbed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for v in ("old", "new"):
        for i, r in enumerate(out[v]):
            s, d = r["windows"]["steady"], r["derived"]
            pr = r.get("poll_rate_1s") or {}
            print(f"| {NAME[v]} | {i+1} | {r['started_at'][11:]} | {r['loadavg_before'].split()[0]} | {s['other_cpu_cores']} | "
                  f"{s['latency']['p50_ms']}/{s['latency']['p99_ms']}/{s['latency']['max_ms']} | {s['cpu_cores']} | {d['cpu_us_per_poll']} | "
                  f"{d['rss_per_instance_bytes']:.0f} B ({d['rss_above_baseline_per_instance_bytes']:.0f} B) | {d['pss_per_instance_bytes']:.0f} B | "
                  f"{s['polls_per_s']:,.0f} ({100*s['polls_fraction']:.1f}%) | {g(pr,'steady','max_over_mean')} ({g(pr,'steady','p99_over_mean')}) | "
                  f"{'yes' if r.get('disturbed') else 'no'} |")
    print()
    print("| binary | runs | RSS/instance | above baseline | PSS/instance | cores | µs CPU per poll | steady p50/p99/max ms | polls/s | buckets max/mean |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for v in ("old", "new"):
        rs = out[v]
        D = lambda k: med([r["derived"][k] for r in rs])
        S = lambda *p: med([g(r, "windows", "steady", *p) for r in rs])
        P = lambda k: med([g(r, "poll_rate_1s", "steady", k) for r in rs])
        print(f"| {NAME[v]} | {len(rs)} | {f(D('rss_per_instance_bytes'),0)} B | {f(D('rss_above_baseline_per_instance_bytes'),0)} B | "
              f"{f(D('pss_per_instance_bytes'),0)} B | {f(D('cores'),3)} | {f(D('cpu_us_per_poll'),1)} | "
              f"{f(S('latency','p50_ms'))}/{f(S('latency','p99_ms'))}/{f(S('latency','max_ms'))} | {f(S('polls_per_s'),0)} | {f(P('max_over_mean'))} |")
    print()
    a, b = out["old"], out["new"]
    print(f"- ratio new/old per repeat: RSS/instance {ratios(a, b, lambda r: r['derived']['rss_per_instance_bytes'])}; "
          f"above baseline {ratios(a, b, lambda r: r['derived']['rss_above_baseline_per_instance_bytes'])}; "
          f"CPU/poll {ratios(a, b, lambda r: r['derived']['cpu_us_per_poll'])}; "
          f"steady p99 {ratios(a, b, lambda r: r['windows']['steady']['latency']['p99_ms'])}")

which = sys.argv[1] if len(sys.argv) > 1 else "all"
if which in ("all", "seed"): seed()
if which in ("all", "idle"): idle()
