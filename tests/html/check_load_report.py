#!/usr/bin/env python3
"""Opens a load test's HTML report in headless Chromium and looks at the result.

  check_load_report.py REPORT.html

- The DOM Chromium built (--dump-dom) has the charts as SVG with their lines: at least three
  <svg class="chart"> holding polylines with points.
- The page as drawn (--screenshot, decoded here) shows them: pixels in the colour of the
  requests/s line, of the p99 line and of the VUs (or connections) line, and a page that is
  not blank.
Exits 0 when all hold, 1 with the reason otherwise, 2 when Chromium cannot run.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    print("no chromium found (tools/install-deps installs it)", file=sys.stderr)
    sys.exit(2)


def run(browser, args, timeout=90):
    profile = tempfile.mkdtemp(prefix="corral-chromium-")
    try:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", f"--user-data-dir={profile}"] + args
        return subprocess.run(cmd, capture_output=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def read_png(path):
    """(width, height, rows of (r, g, b)) for an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), f"unexpected PNG format {depth}/{color}"
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def near(p, rgb, tol=40):
    return all(abs(p[i] - rgb[i]) <= tol for i in range(3))


def main():
    report = os.path.abspath(sys.argv[1])
    browser = chromium()
    dom = run(browser, ["--dump-dom", "file://" + report])
    if dom.returncode != 0:
        print(f"chromium --dump-dom failed: {dom.stderr.decode(errors='replace')[-500:]}", file=sys.stderr)
        return 2
    html = dom.stdout.decode(errors="replace")
    charts = re.findall(r'<svg class="chart"', html)
    lines = re.findall(r'<polyline[^>]*points="([^"]+)"', html)
    if len(charts) < 3 or len(lines) < 3 or min(len(p.split()) for p in lines) < 2:
        print(f"the DOM has {len(charts)} charts and {len(lines)} lines with points", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as d:
        png = os.path.join(d, "report.png")
        shot = run(browser, ["--window-size=1000,2200", f"--screenshot={png}", "file://" + report])
        if shot.returncode != 0 or not os.path.exists(png):
            print(f"chromium --screenshot failed: {shot.stderr.decode(errors='replace')[-500:]}",
                  file=sys.stderr)
            return 2
        width, height, rows = read_png(png)
    pixels = [p for row in rows for p in row]
    not_white = sum(1 for p in pixels if p != (255, 255, 255))
    colours = {"requests/s": (0x1f, 0x77, 0xb4), "p99": (0xd6, 0x27, 0x28), "VUs": (0x94, 0x67, 0xbd),
               "connections": (0x8c, 0x56, 0x4b)}
    seen = {name: sum(1 for p in pixels if near(p, rgb)) for name, rgb in colours.items()}
    # The held model's connections follow its VUs and are drawn over them: one of the two.
    seen["VUs or connections"] = seen.pop("VUs") + seen.pop("connections")
    print(f"{width}x{height}: {not_white} pixels drawn; line pixels {seen}")
    if not_white < width * height // 100:
        print("the page is (almost) blank", file=sys.stderr)
        return 1
    missing = [name for name, n in seen.items() if n < 100]
    if missing:
        print(f"no line drawn in the colour of {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
