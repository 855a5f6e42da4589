#!/usr/bin/env python3
"""Charts a JSON of first runs measured side by side on GPU hosts
(bench/results/ssb_first_runs_*-staging.json: per host, "runs" of
{"service", "query", "execution_ms"}): per host and query, one bar per
service at the median of its runs, the runs' range printed beside it.
A JSON may name another field of its runs to chart ("chart_field", e.g.
"planning_ms") and the chart's title ("chart_title").

    bench/first_runs_chart.py RESULTS.json [OUT.png]   (default: beside the JSON)
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from canvas import Canvas  # noqa: E402

COLORS = [(70, 110, 170), (220, 120, 40), (90, 160, 90), (150, 90, 160)]


def chart(res, path):
    hosts = res["hosts"]
    field = res.get("chart_field", "execution_ms")
    title = res.get("chart_title", "first runs: execution ms (median, range)")
    rows = []                   # (host, query, [(service, [ms...])])
    services = []
    for h, hv in hosts.items():
        queries = []
        for r in hv["runs"]:
            if r["query"] not in queries:
                queries.append(r["query"])
            if r["service"] not in services:
                services.append(r["service"])
        for q in queries:
            per = []
            for s in services:
                ms = [r[field] for r in hv["runs"]
                      if r["query"] == q and r["service"] == s]
                if ms:
                    per.append((s, ms))
            rows.append((h, q, per))
    top = max(max(ms) for _, _, per in rows for _, ms in per)
    bar_h, gap, scale_w = 9, 2, 520
    height = 60 + sum(14 + len(per) * (bar_h + gap) for _, _, per in rows)
    c = Canvas(260 + scale_w, height)
    c.text(10, 10, title.upper())
    x = 10
    for i, s in enumerate(services):
        c.rect(x, 30, x + 12, 40, COLORS[i % len(COLORS)])
        c.text(x + 16, 32, s.upper())
        x += 30 + 8 * len(s)
    y = 52
    for h, q, per in rows:
        c.text(10, y + 2, ("%s %s" % (h, q)).upper())
        y += 12
        for s, ms in per:
            med = statistics.median(ms)
            w = int(scale_w * med / top)
            col = COLORS[services.index(s) % len(COLORS)]
            c.rect(120, y, 120 + w, y + bar_h, col)
            c.text(126 + w, y + 1, "%.1f (%.1f-%.1f)" % (med, min(ms), max(ms)), scale=1)
            y += bar_h + gap
        y += 2
    c.save(path)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.splitext(src)[0] + ".png"
    with open(src) as fh:
        chart(json.load(fh), out)
    print(out)


if __name__ == "__main__":
    main()
