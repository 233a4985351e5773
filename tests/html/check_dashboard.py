#!/usr/bin/env python3
"""Opens corral's web dashboard in headless Chromium and checks what it shows.

  check_dashboard.py URL --expect EXPECT.json --screenshot OUT.png
  check_dashboard.py URL --token-prompt

With --expect, the DOM Chromium built after the page's scripts ran (--dump-dom) must show:
- each worker of "workers" ([{"slot": 0, "pid": 123, "cpu": true}, ...]) as a row of the
  workers table with its slot, its pid and the state "ready" (and with "cpu", a CPU use in %);
- each run of "runs" ([{"id", "scenario", "state", "progress"}]) as a row of the runs table
  holding those texts ("progress" as the bar's label, "0/200 0%"), and with "badge", its state
  badge having that class ("s-failed": red);
- each text of "log_lines" in a line of the log tail;
- each text of "texts" somewhere in the page's text, and no element with an id of
  "absent_ids" (markup inside a run's name must stay text);
- on a run's page, exactly the instances of "instances" ([{"i": 0, "state": "failed"}, ...]) as
  rows of its instances table, each with its number and state;
- on an instance's page, each step of "steps" ([{"step": 0, "state": "failed", "reason": "..."}])
  as a row of its steps table, with its state and a reason holding that text.
- each load test of "loads" ([{"id", "state"}]) as a row of the load tests table with its id
  and state;
- on a load test's page, "load_page" ({"state", "charts": N, "marks": [kinds], "thresholds":
  [{"name", "ok"}]}): the page's state, at least N charts (<svg class="chart">) each with lines
  of at least two points, a mark (a dashed line) of each kind over the charts, and each
  threshold as a row, ok or crossed.
Then it takes a screenshot (kept at OUT.png, a test artefact) and checks that it is not blank
and shows the green of the "ready" badges and the blue of running instances; on a load test's
page, the colours of its requests/s, p99 and VUs (or connections) lines instead.
With --token-prompt, the page must show its token dialog and no worker row.
Exits 0 when all hold, 1 with the reason otherwise, 2 when Chromium cannot run.
"""
import argparse
import json
import os
import sys
from collections import Counter
from html.parser import HTMLParser

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_load_report import chromium, near, read_png, run  # noqa: E402

# The page polls; virtual time lets Chromium run its timers and fetches without waiting for them.
BROWSE = ["--virtual-time-budget=8000", "--run-all-compositor-stages-before-draw"]
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
GREEN, BLUE = (0x2e, 0x9e, 0x4f), (0x2f, 0x6f, 0xdb)  # app.css: --green, --blue


class Node:
    def __init__(self, tag, attrs):
        self.tag, self.attrs, self.children = tag, dict(attrs), []

    def text(self):
        return "".join(c if isinstance(c, str) else " " + c.text() + " " for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()


class Tree(HTMLParser):
    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs)
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def words(text):
    return " ".join(text.split())


def rows(tree, attr):
    return [n for n in tree.root.walk() if n.tag == "tr" and attr in n.attrs]


def check_dom(tree, expect):
    problems, seen = [], []
    workers = {n.attrs["data-slot"]: n for n in rows(tree, "data-slot")}
    for w in expect.get("workers", []):
        row = workers.get(str(w["slot"]))
        text = words(row.text()) if row else ""
        seen.append(f"worker row {w['slot']}: {text!r}")
        if not row or row.attrs.get("data-pid") != str(w["pid"]) or str(w["pid"]) not in text \
                or "ready" not in text:
            problems.append(f"no row for worker slot {w['slot']} pid {w['pid']} ready")
        elif w.get("cpu") and "%" not in text:
            problems.append(f"the row of worker slot {w['slot']} shows no CPU use")
    runs = {n.attrs["data-run"]: n for n in rows(tree, "data-run")}
    for r in expect.get("runs", []):
        row = runs.get(r["id"])
        text = words(row.text()) if row else ""
        seen.append(f"run row {r['id']}: {text!r}")
        for part in (r["id"], r.get("scenario", ""), r.get("state", ""), r.get("progress", "")):
            if part and words(part) not in text:
                problems.append(f"the row of run {r['id']} does not show {part!r}")
        if r.get("badge") and row:
            badges = [n.attrs.get("class", "").split() for n in row.walk()
                      if "badge" in n.attrs.get("class", "").split()]
            if not any(r["badge"] in b for b in badges):
                problems.append(f"the state badge of run {r['id']} is {badges}, not {r['badge']}")
    logs = [words(n.text()) for n in tree.root.walk()
            if n.tag == "div" and "line" in n.attrs.get("class", "").split()]
    seen.append(f"{len(logs)} log lines")
    for part in expect.get("log_lines", []):
        if not any(part in line for line in logs):
            problems.append(f"no log line holds {part!r}")
    problems += check_instances(tree, expect, seen)
    problems += check_loads(tree, expect, seen)
    page = words(tree.root.text())
    for part in expect.get("texts", []):
        if words(part) not in page:
            problems.append(f"the page does not show {part!r}")
    ids = {n.attrs.get("id") for n in tree.root.walk()}
    for absent in expect.get("absent_ids", []):
        if absent in ids:
            problems.append(f"an element with id {absent!r} exists: markup from the API was parsed")
    return problems, seen


def check_instances(tree, expect, seen):
    problems = []
    if "instances" in expect:
        shown = sorted((int(n.attrs["data-instance"]), n.attrs.get("data-state"))
                       for n in rows(tree, "data-instance"))
        want = sorted((i["i"], i["state"]) for i in expect["instances"])
        seen.append(f"instance rows: {shown}")
        if shown != want:
            problems.append(f"the instances shown are {shown}, not {want}")
    steps = {n.attrs["data-step"]: n for n in rows(tree, "data-step")}
    for s in expect.get("steps", []):
        row = steps.get(str(s["step"]))
        text = words(row.text()) if row else ""
        seen.append(f"step row {s['step']}: {text!r}")
        if not row or row.attrs.get("data-state") != s["state"] or words(s["reason"]) not in text:
            problems.append(f"no row for step {s['step']} {s['state']} with {s['reason']!r}")
    return problems


def check_loads(tree, expect, seen):
    problems = []
    loads = {n.attrs["data-load"]: n for n in rows(tree, "data-load")}
    for t in expect.get("loads", []):
        row = loads.get(t["id"])
        text = words(row.text()) if row else ""
        seen.append(f"load row {t['id']}: {text!r}")
        if not row or row.attrs.get("data-state") != t["state"] or t["id"] not in text:
            problems.append(f"no row for load test {t['id']} {t['state']}")
    page = expect.get("load_page")
    if not page:
        return problems
    views = [n for n in tree.root.walk() if "load-view" in n.attrs.get("class", "").split()]
    state = views[0].attrs.get("data-state") if views else None
    charts = [n for n in tree.root.walk() if n.tag == "svg" and n.attrs.get("class") == "chart"]
    drawn = [c for c in charts
             if any(len(l.attrs.get("points", "").split()) >= 2 for l in c.walk()
                    if l.tag == "polyline")]
    marks = sorted({n.attrs["data-mark"] for n in tree.root.walk() if "data-mark" in n.attrs})
    shown = {n.attrs["data-threshold"]: "crossed" not in n.attrs.get("class", "")
             for n in rows(tree, "data-threshold")}
    seen.append(f"load page: state {state}, {len(drawn)} of {len(charts)} charts drawn, "
                f"marks {marks}, thresholds {shown}")
    if state != page.get("state", state):
        problems.append(f"the load test's page says {state}, not {page['state']}")
    if len(drawn) < page.get("charts", 0):
        problems.append(f"{len(drawn)} charts with lines, not {page['charts']}")
    for kind in page.get("marks", []):
        if kind not in marks:
            problems.append(f"no {kind} mark over the charts")
    for th in page.get("thresholds", []):
        if shown.get(th["name"]) != th["ok"]:
            problems.append(f"threshold {th['name']!r} is not shown as ok={th['ok']}")
    return problems


def check_screenshot(browser, url, png):
    size = "1400,2000" if "#/loads/" in url else "1400,1000"  # a load test's charts run long
    shot = run(browser, BROWSE + [f"--window-size={size}", f"--screenshot={png}", url])
    if shot.returncode != 0 or not os.path.exists(png):
        print(f"chromium --screenshot failed: {shot.stderr.decode(errors='replace')[-500:]}",
              file=sys.stderr)
        return 2
    width, height, pixels = read_png(png)
    flat = [p for row in pixels for p in row]
    background = Counter(flat[:: max(1, len(flat) // 5000)]).most_common(1)[0][0]
    drawn = sum(1 for p in flat if p != background)
    green = sum(1 for p in flat if near(p, GREEN, 12))
    blue = sum(1 for p in flat if near(p, BLUE, 12))
    print(f"screenshot {png}: {width}x{height}, {drawn} pixels off the background, "
          f"{green} green (ready), {blue} blue (running)")
    if drawn < width * height // 50:
        print("the screenshot is (almost) blank", file=sys.stderr)
        return 1
    if "#/loads/" in url:  # a load test's page: its lines in their colours
        lines = {name: sum(1 for p in flat if near(p, rgb, 20)) for name, rgb in
                 (("requests/s", (0x1f, 0x77, 0xb4)), ("p99", (0xd6, 0x27, 0x28)),
                  ("VUs", (0x94, 0x67, 0xbd)), ("connections", (0x8c, 0x56, 0x4b)))}
        # A test's connections follow its VUs and are drawn over them: one of the two.
        lines["VUs or connections"] = lines.pop("VUs") + lines.pop("connections")
        print(f"line pixels {lines}")
        missing = [name for name, n in lines.items() if n < 100]
        if missing:
            print(f"no line drawn in the colour of {missing}", file=sys.stderr)
            return 1
        return 0
    # The ready badges and the bar of a run whose instances all run: some hundreds, thousands.
    if green < 400 or blue < 1000:
        print("the screenshot lacks the green of ready workers or the blue of running instances",
              file=sys.stderr)
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--expect")
    parser.add_argument("--screenshot")
    parser.add_argument("--token-prompt", action="store_true")
    args = parser.parse_args()
    browser = chromium()
    dom = run(browser, BROWSE + ["--dump-dom", args.url])
    if dom.returncode != 0:
        print(f"chromium --dump-dom failed: {dom.stderr.decode(errors='replace')[-500:]}",
              file=sys.stderr)
        return 2
    html = dom.stdout.decode(errors="replace")
    tree = Tree(html)
    if args.token_prompt:
        dialog = [n for n in tree.root.walk() if n.attrs.get("id") == "token-dialog"]
        shown = bool(dialog) and "open" in dialog[0].attrs
        print(f"token dialog open: {shown}; worker rows: {len(rows(tree, 'data-slot'))}")
        if not shown or rows(tree, "data-slot"):
            print("the page does not ask for the token, or shows data without it", file=sys.stderr)
            return 1
        return 0
    with open(args.expect) as f:
        expect = json.load(f)
    problems, seen = check_dom(tree, expect)
    print("\n".join(seen))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(html[-3000:], file=sys.stderr)
        return 1
    return check_screenshot(browser, args.url, args.screenshot) if args.screenshot else 0


if __name__ == "__main__":
    sys.exit(main())
