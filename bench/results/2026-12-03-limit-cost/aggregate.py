#!/usr/bin/env python3
"""Medians of driver.sh's runs and the ratio with a limit to without, pair by pair (the runs
were alternating). Usage: aggregate.py OUT_DIR"""
import glob, json, statistics, sys

out = sys.argv[1]

def runs(label):
    rs = []
    for p in sorted(glob.glob(f"{out}/{label}/*-seed-polling.json")):
        rs += json.load(open(p))["runs"]
    return [r for r in rs if not r.get("error")]

def steady(r, key):
    s = r["windows"]["steady"]
    if key == "cpu_us_per_poll":
        return s["cpu_cores"] / s["polls_per_s"] * 1e6
    if key == "p99_ms":
        return s["latency"]["p99_ms"]
    return s[key]

keys = ["cpu_us_per_poll", "cpu_cores", "polls_per_s", "peak_rss_mb", "p99_ms"]
none, lim = runs("none"), runs("lim")
print(f"runs: none {len(none)}, lim {len(lim)}\n")
print("| steady window | none (median) | lim (median) | lim / none, pairs | median ratio |")
print("|---|---|---|---|---|")
for k in keys:
    a = [steady(r, k) for r in none]
    b = [steady(r, k) for r in lim]
    pairs = [y / x for x, y in zip(a, b) if x]
    print(f"| {k} | {statistics.median(a):.3f} | {statistics.median(b):.3f} | "
          f"{', '.join(f'{p:.3f}' for p in pairs)} | {statistics.median(pairs):.3f} |")
