#!/usr/bin/env python3
"""SVG plots of the benchmarks' results, written next to their tables (stdlib only).

    benches/plots.py --from-results     # redraws every plot from the results files, no bench run

- compare.svg: ctrlinit beside the peers, one panel per headline metric of RESULTS.md
  (benches/results-raw.json, medians across repetitions; logarithmic where values span > 30x).
- restart.svg: restart latency after SIGKILL per tool: every sample when the run kept them
  (results-raw.json `samples_ms`), else each repetition's min-max range, median and p90.
- scale.svg: the scaling curves of scale.py (start, status, idle PSS, stop against the number of
  programs), from RESULTS-scale.md's table or scale.py's own results at the end of its run.

The benchmark scripts call `write_compare`, `write_restart` and `write_scale` after they write
their tables; `--from-results` reads what they wrote.
"""

import argparse
import json
import math
import os
import re
import statistics
from xml.sax.saxutils import escape

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""
OURS = "#d9480f"  # ctrlinit
PEER = "#5c7cfa"
REF = "#adb5bd"  # references measured in the same run (floor, cat)
PALETTE = ["#d9480f", "#1c7ed6", "#2f9e44", "#ae3ec9", "#f08c00", "#495057"]


class Svg:
    """A drawing: elements appended in order, written as one standalone SVG file."""

    def __init__(self, width, height):
        self.width, self.height, self.parts = width, height, []

    def rect(self, x, y, w, h, fill, title=None):
        tip = f"<title>{escape(title)}</title>" if title else ""
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" fill="{fill}">{tip}</rect>')

    def line(self, x1, y1, x2, y2, stroke="#868e96", width=1, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" stroke-width="{width}"{d}/>')

    def text(self, x, y, s, size=12, anchor="start", fill="#212529", bold=False):
        weight = ' font-weight="bold"' if bold else ""
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{weight}>{escape(s)}</text>')

    def circle(self, x, y, r, fill, opacity=1.0):
        self.parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{fill}" fill-opacity="{opacity}"/>')

    def polyline(self, points, stroke, width=2):
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.parts.append(f'<polyline points="{pts}" fill="none" stroke="{stroke}" stroke-width="{width}"/>')

    def save(self, path):
        body = "\n".join(self.parts)
        with open(path, "w") as f:
            f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                    f'viewBox="0 0 {self.width} {self.height}" {FONT}>\n'
                    f'<rect width="100%" height="100%" fill="white"/>\n{body}\n</svg>\n')


def nice(x):
    """A short label for a figure: 1,234 / 12.3 / 1.23 / 0.012."""
    if x is None:
        return "–"
    a = abs(x)
    if a == 0:
        return "0"
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 0.1:
        return f"{x:.2f}"
    return f"{x:.3f}"


class Scale:
    """Maps values onto [x0, x1]: linear from 0, or logarithmic over the data's decades."""

    def __init__(self, values, x0, x1, log=None):
        vals = [v for v in values if v is not None and v > 0]
        lo, hi = (min(vals), max(vals)) if vals else (1, 1)
        self.log = (hi / lo > 30) if log is None else log
        self.x0, self.x1 = x0, x1
        if self.log:
            self.lo = 10 ** math.floor(math.log10(lo))
            self.hi = 10 ** math.ceil(math.log10(hi * 1.0001))
        else:
            self.lo, self.hi = 0.0, (hi * 1.1 if hi > 0 else 1.0)

    def __call__(self, v):
        if self.log:
            v = max(v, self.lo)
            f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / (self.hi - self.lo)
        return self.x0 + f * (self.x1 - self.x0)

    def ticks(self):
        if self.log:
            n = round(math.log10(self.hi / self.lo))
            return [self.lo * 10 ** i for i in range(n + 1)]
        step = 10 ** math.floor(math.log10(self.hi / 2))
        for m in (1, 2, 5, 10):
            if self.hi / (step * m) <= 6:
                step *= m
                break
        return [i * step for i in range(int(self.hi / step) + 1)]


def axis(svg, scale, y_top, y_bottom, label_y):
    for t in scale.ticks():
        x = scale(t)
        svg.line(x, y_top, x, y_bottom, stroke="#e9ecef")
        svg.text(x, label_y, nice(t), size=10, anchor="middle", fill="#868e96")


def hbar_panels(title, subtitle, panels, path, width=760):
    """Panels of horizontal bars: (heading, unit, [(label, value, colour, note)], log)."""
    label_w, x0, x1 = 150, 160, width - 90
    row, head = 17, 34
    height = 58 + sum(head + row * len(rows) + 24 for _, _, rows, _ in panels)
    svg = Svg(width, height)
    svg.text(12, 22, title, size=16, bold=True)
    svg.text(12, 40, subtitle, size=11, fill="#495057")
    y = 58
    for heading, unit, rows, log in panels:
        svg.text(12, y + 16, f"{heading} ({unit})", size=12, bold=True)
        scale = Scale([v for _, v, _, _ in rows], x0, x1, log)
        top, bottom = y + head - 8, y + head + row * len(rows)
        axis(svg, scale, top, bottom, bottom + 12)
        if scale.log:
            svg.text(x1, y + 16, "log scale", size=10, anchor="end", fill="#868e96")
        for i, (label, value, colour, note) in enumerate(rows):
            ry = y + head + i * row
            svg.text(label_w, ry + 12, label, size=11, anchor="end", bold=(colour == OURS))
            if value is None:
                svg.text(x0 + 4, ry + 12, note or "–", size=11, fill="#868e96")
                continue
            w = scale(value) - x0
            svg.rect(x0, ry + 2, w, row - 5, colour, f"{label}: {nice(value)} {unit}")
            svg.text(x0 + w + 4, ry + 12, nice(value) + (f"  {note}" if note else ""), size=11)
        y += head + row * len(rows) + 24
    svg.save(path)


def median_of(reps, key):
    xs = [r.get(key) for r in reps if isinstance(r, dict) and "error" not in r]
    xs = [x for x in xs if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return statistics.median(xs) if xs else None


# (workload, key, heading, unit, divisor, references): the headline rows of RESULTS.md.
COMPARE_METRICS = [
    ("idle", "pss_kib", "idle PSS, 10 programs (tini, dumb-init: 1 child); lower is better", "MiB", 1024, ()),
    ("idle100", "pss_kib", "idle PSS, 100 programs; lower is better", "MiB", 1024, ()),
    ("restart", "median_ms", "restart after SIGKILL, median; lower is better", "ms", 1, ("floor",)),
    ("restart", "p90_ms", "restart after SIGKILL, p90; lower is better", "ms", 1, ("floor",)),
    ("logs", "mb_s", "log file throughput, 100-byte lines; higher is better", "MB/s", 1, ("cat",)),
    ("reap", "clear_ms", "20,000 orphans: time until none left; lower is better", "ms", 1, ()),
    ("start", "all_ms", "100 programs started; lower is better", "ms", 1, ()),
    ("stop", "ms", "50 programs stopped: SIGTERM to namespace empty; lower is better", "ms", 1, ()),
]


def write_compare(raw_doc, path):
    """compare.svg from compare.py's raw results (`{"info", "raw", "errors"}`)."""
    raw, info = raw_doc["raw"], raw_doc.get("info", {})
    panels = []
    for workload, key, heading, unit, div, refs in COMPARE_METRICS:
        tools = raw.get(workload, {})
        rows = []
        for tool, reps in tools.items():
            if tool in ("writer",) or (tool in ("floor", "cat") and tool not in refs):
                continue
            v = median_of(reps, key)
            note = None
            if v is None and any(isinstance(r, dict) and r.get("left_at_deadline") for r in reps):
                note = "never cleared within the deadline"
            colour = OURS if tool == "ctrlinit" else REF if tool in refs else PEER
            label = f"{tool} (reference)" if tool in refs else tool
            rows.append((label, v / div if v is not None else None, colour, note))
        if rows:
            panels.append((heading, unit, rows, None))
    when = info.get("date", "?")
    reps = info.get("args", {}).get("reps", "?")
    hbar_panels("ctrlinit beside supervisord, s6, runit, tini and dumb-init",
                f"benches/compare.py, {when}, median of {reps} repetitions; table and method in benches/RESULTS.md",
                panels, path)


def write_restart(raw_doc, path, width=760):
    """restart.svg: the spread of restart latency per tool and repetition."""
    tools = raw_doc["raw"].get("restart", {})
    rows = []
    for tool, reps in tools.items():
        for i, r in enumerate(reps):
            if isinstance(r, dict) and "error" not in r and r.get("median_ms") is not None:
                rows.append((tool, i + 1, r))
    values = [v for _, _, r in rows
              for v in (r.get("samples_ms") or [r.get("min_ms"), r.get("max_ms"), r["median_ms"], r.get("p90_ms")])
              if v is not None]
    x0, x1, row = 190, width - 30, 20
    height = 120 + row * len(rows)
    svg = Svg(width, height)
    svg.text(12, 22, "Restart latency after SIGKILL (kill to the new process's first instruction)", size=15, bold=True)
    has_samples = any(r.get("samples_ms") for _, _, r in rows)
    svg.text(12, 40, ("every restart as a dot; " if has_samples else "per repetition: min–max line, median–p90 box; ")
             + "ms, log scale. benches/compare.py, results-raw.json", size=11, fill="#495057")
    scale = Scale(values, x0, x1, log=True)
    top, bottom = 56, 56 + row * len(rows)
    axis(svg, scale, top, bottom, bottom + 14)
    svg.text((x0 + x1) / 2, bottom + 30, "milliseconds (log scale)", size=11, anchor="middle", fill="#495057")
    for i, (tool, rep, r) in enumerate(rows):
        y = top + i * row + row / 2
        colour = OURS if tool == "ctrlinit" else REF if tool == "floor" else PEER
        label = "fork+exec floor" if tool == "floor" else tool
        svg.text(x0 - 10, y + 4, f"{label}  run {rep}", size=11, anchor="end", bold=(tool == "ctrlinit"))
        samples = r.get("samples_ms")
        if samples:
            for j, s in enumerate(samples):
                svg.circle(scale(s), y + ((j % 5) - 2) * 1.6, 2.2, colour, 0.45)
        else:
            if r.get("min_ms") is not None and r.get("max_ms") is not None:
                svg.line(scale(r["min_ms"]), y, scale(r["max_ms"]), y, stroke=colour, width=1.5)
            lo, hi = scale(r["median_ms"]), scale(r.get("p90_ms") or r["median_ms"])
            svg.rect(lo, y - 5, max(hi - lo, 2), 10, colour, f"{label} run {rep}: median {nice(r['median_ms'])} ms, p90 {nice(r.get('p90_ms'))} ms")
        svg.line(scale(r["median_ms"]), y - 7, scale(r["median_ms"]), y + 7, stroke="#212529", width=2)
    svg.save(path)


# (key, heading): the curves of scale.py.
SCALE_METRICS = [
    ("start_ms", "start all (ms)"),
    ("status_ms", "status --json (ms)"),
    ("pss_kib", "idle PSS (KiB)"),
    ("stop_ms", "stop all (ms)"),
]


def write_scale(results, path, note="", width=760):
    """scale.svg from scale.py's results: `{(build, programs): [run dicts]}`."""
    builds = sorted({b for b, _ in results}, key=lambda b: (b != "new", b))
    sizes = sorted({n for _, n in results})
    metrics = [(k, h) for k, h in SCALE_METRICS if any(median_of(v, k) is not None for v in results.values())]
    cols = 2
    pw, ph = (width - 40) / cols, 230
    height = 80 + ph * math.ceil(len(metrics) / cols)
    svg = Svg(width, height)
    svg.text(12, 22, "ctrlinit at scale: programs configured vs. cost", size=16, bold=True)
    svg.text(12, 40, note or "benches/scale.py, median of its runs; table in benches/RESULTS-scale.md", size=11, fill="#495057")
    for b, build in enumerate(builds):
        svg.rect(12 + b * 90, 50, 12, 10, PALETTE[b % len(PALETTE)])
        svg.text(30 + b * 90, 59, f"build: {build}", size=11)
    xs = Scale(sizes, 0, 1, log=False)
    for m, (key, heading) in enumerate(metrics):
        ox, oy = 20 + (m % cols) * pw, 72 + (m // cols) * ph
        left, right, top, bottom = ox + 50, ox + pw - 15, oy + 26, oy + ph - 40
        svg.text(ox + 4, oy + 14, heading, size=12, bold=True)
        vals = [median_of(results[(b, n)], key) for b in builds for n in sizes if (b, n) in results]
        ys = Scale(vals, bottom, top, log=False)
        xs = Scale(sizes, left, right, log=False)
        for t in ys.ticks():
            y = ys(t)
            svg.line(left, y, right, y, stroke="#e9ecef")
            svg.text(left - 4, y + 3, nice(t), size=9, anchor="end", fill="#868e96")
        for n in sizes:
            svg.line(xs(n), bottom, xs(n), bottom + 4)
            svg.text(xs(n), bottom + 15, f"{n:,}", size=9, anchor="middle", fill="#868e96")
        svg.text((left + right) / 2, bottom + 30, "programs", size=10, anchor="middle", fill="#495057")
        for b, build in enumerate(builds):
            pts = [(xs(n), ys(v)) for n in sizes if (build, n) in results
                   for v in [median_of(results[(build, n)], key)] if v is not None]
            colour = PALETTE[b % len(PALETTE)]
            if len(pts) > 1:
                svg.polyline(pts, colour)
            for x, y in pts:
                svg.circle(x, y, 3, colour)
    svg.save(path)


def scale_results_from_markdown(text):
    """The rows of the last `| build | programs | ...` table in RESULTS-scale.md, as scale.py's
    results (one run per row); its column headings mapped back to scale.py's keys."""
    names = {"start all (ms)": "start_ms", "status --json (ms)": "status_ms", "p90 (ms)": "status_p90_ms",
             "raw status (ms)": "raw_status_ms", "idle PSS (KiB)": "pss_kib", "KiB/program": "pss_per_program_kib",
             "stop all (ms)": "stop_ms"}
    results, header = {}, None
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] == "build" and cells[1] == "programs":
            header, results = cells, {}
            continue
        if header is None or not line.startswith("|") or set(line) <= set("|-: "):
            if header is not None and not line.startswith("|"):
                header = None if results else header
            continue
        run = {}
        for h, c in zip(header[2:], cells[2:]):
            try:
                run[names.get(h, h)] = float(c.replace(",", ""))
            except ValueError:
                pass
        try:
            results.setdefault((cells[0], int(cells[1].replace(",", ""))), []).append(run)
        except ValueError:
            continue
    return results


def from_results():
    raw_path = os.path.join(BENCH_DIR, "results-raw.json")
    if os.path.exists(raw_path):
        with open(raw_path) as f:
            doc = json.load(f)
        write_compare(doc, os.path.join(BENCH_DIR, "compare.svg"))
        write_restart(doc, os.path.join(BENCH_DIR, "restart.svg"))
        print("wrote benches/compare.svg, benches/restart.svg")
    scale_path = os.path.join(BENCH_DIR, "RESULTS-scale.md")
    if os.path.exists(scale_path):
        with open(scale_path) as f:
            text = f.read()
        results = scale_results_from_markdown(text)
        if results:
            m = re.search(r"Measured ([^\n]*)", text)
            when = m.group(1).replace("*", "").split(" on ")[0].strip(" ,") if m else "?"
            note = f"benches/scale.py, measured {when}; medians; table and conditions in RESULTS-scale.md"
            write_scale(results, os.path.join(BENCH_DIR, "scale.svg"), note)
            print("wrote benches/scale.svg")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from-results", action="store_true", help="redraw every plot from the results files")
    args = ap.parse_args()
    if not args.from_results:
        ap.error("nothing to do: pass --from-results (the bench scripts draw their own plots)")
    from_results()


if __name__ == "__main__":
    main()
