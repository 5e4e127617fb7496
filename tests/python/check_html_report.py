#!/usr/bin/python3
"""Renders a moe-conform HTML report in headless Chromium and checks that people would see it
(spec/report-format.md, section 8), without moe-conform's code.

Usage: check_html_report.py --chromium PATH --kind run|selftest PAGE.html [--min-heatmaps N]

Checks:
  - self-contained: no script, no stylesheet link, no URL of any kind but in-page anchors;
  - it loads: Chromium, with every network name mapped to nowhere, parses it (--dump-dom) into a
    DOM that holds the heatmaps (run: svg.heatmap with rects) or the catch matrix (selftest:
    table.matrix), and reports no failed load and no uncaught error;
  - it is not blank: a screenshot (--screenshot) shows the heatmap's over-bound and within-bound
    colours in the heatmaps themselves (long runs of the scale's colours, not the legend's
    swatches; run) or the matrix's caught and passing colours (selftest), and many colours.
Prints one line per check ("PASS: ..." or "FAIL: ...: why") and exits 0 when all passed, 1
otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy
from PIL import Image

# The colours report_html.cpp and selftest_html.cpp draw with (conformance/src/html_page.hpp).
OVER_BOUND = {(0xfd, 0xae, 0x61), (0xf4, 0x6d, 0x43), (0xd7, 0x30, 0x27), (0xa5, 0x00, 0x26), (0x40, 0x00, 0x4b)}
WITHIN_BOUND = {(0xee, 0xf3, 0xf8), (0xc6, 0xdb, 0xef), (0x6b, 0xae, 0xd6), (0x21, 0x71, 0xb5)}
CAUGHT = {(0xe5, 0x53, 0x4b)}
PASSED = {(0xac, 0xee, 0xbb)}

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                  "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
                  "--enable-logging=stderr", "--v=0"]


def packed(rgb):
    return (rgb[0] << 16) | (rgb[1] << 8) | rgb[2]


def long_runs(mask, length):
    """The pixels of `mask` that lie in a horizontal run of at least `length` set pixels."""
    out = numpy.zeros_like(mask)
    for y in numpy.nonzero(mask.any(axis=1))[0]:
        row = numpy.concatenate(([0], mask[y].astype(numpy.int8), [0]))
        edges = numpy.diff(row)
        for start, stop in zip(numpy.nonzero(edges == 1)[0], numpy.nonzero(edges == -1)[0]):
            if stop - start >= length:
                out[y, start:stop] = True
    return out


def chromium(binary, args, timeout=60):
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([binary] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile] + args,
                              capture_output=True, text=True, timeout=timeout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--chromium", required=True)
    ap.add_argument("--kind", choices=["run", "selftest"], required=True)
    ap.add_argument("--min-heatmaps", type=int, default=1)
    a = ap.parse_args()
    results = []

    def check(name, ok, why=""):
        results.append(ok)
        print(("PASS: " if ok else "FAIL: ") + name + ("" if ok else ": " + why))

    text = open(a.page, encoding="utf-8").read()
    external = re.findall(r"<script|<link|<img|<iframe|@import|url\(|(?:src|href)\s*=\s*\"(?!#)[^\"]*\"", text)
    check("self-contained (no script, link or URL)", not external, str(external[:5]))
    check("no network address", "http://" not in text and "https://" not in text)

    url = "file://" + os.path.abspath(a.page)
    dom = chromium(a.chromium, ["--dump-dom", url])
    check("Chromium loads the page", dom.returncode == 0 and "</html>" in dom.stdout, dom.stderr[-500:])
    problems = [l for l in dom.stderr.splitlines()
                if "Uncaught" in l or "Failed to load" in l or "net::ERR" in l or "CONSOLE" in l]
    check("no failed load, no uncaught error, no console message", not problems, "\n".join(problems[:5]))
    if a.kind == "run":
        maps = dom.stdout.count('<svg class="heatmap"')
        check("the heatmaps are in the DOM", maps >= a.min_heatmaps, "%d, expected >= %d" % (maps, a.min_heatmaps))
        check("the heatmaps have cells", dom.stdout.count("<rect ") >= maps, "no rect")
    else:
        check("the catch matrix is in the DOM", '<table class="matrix">' in dom.stdout)

    with tempfile.TemporaryDirectory() as tmp:
        png = os.path.join(tmp, "page.png")
        # Tall enough for the mutants table (47 rows) and the top of the catch matrix below it.
        shot = chromium(a.chromium, ["--window-size=1280,5000", "--screenshot=" + png, url])
        check("Chromium takes a screenshot", shot.returncode == 0 and os.path.exists(png), shot.stderr[-500:])
        if not os.path.exists(png):
            return 1
        rgb = numpy.asarray(Image.open(png).convert("RGB"), dtype=numpy.uint32)
    code = (rgb[:, :, 0] << 16) | (rgb[:, :, 1] << 8) | rgb[:, :, 2]  # one integer per pixel
    colours = len(numpy.unique(code))
    check("not blank: many colours", colours > 10, "%d colours" % colours)
    if a.kind == "run":
        # Heatmap pixels are those in long horizontal runs of the scale's colours: the legend's
        # small swatches do not count, so a heatmap drawn blank fails however many legends show.
        scale = numpy.isin(code, [packed(c) for c in OVER_BOUND | WITHIN_BOUND])
        in_maps = long_runs(scale, 40)
        over = int((in_maps & numpy.isin(code, [packed(c) for c in OVER_BOUND])).sum())
        within = int((in_maps & numpy.isin(code, [packed(c) for c in WITHIN_BOUND])).sum())
        check("the heatmap shows elements over their bound", over >= 200, "%d pixels" % over)
        check("the heatmap shows elements within their bound", within >= 200, "%d pixels" % within)
    else:
        # Each matrix cell is 8 x 14 pixels; the legend's one swatch of each colour is far less
        # than the 2000 pixels asked for.
        caught = int(numpy.isin(code, [packed(c) for c in CAUGHT]).sum())
        passed = int(numpy.isin(code, [packed(c) for c in PASSED]).sum())
        check("the matrix shows caught cells", caught >= 2000, "%d pixels" % caught)
        check("the matrix shows passing cells", passed >= 2000, "%d pixels" % passed)
    print("%d passed, %d failed" % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
