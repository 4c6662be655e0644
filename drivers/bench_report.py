"""Summarizes a benchmark run: medians per cell, ratios to the ceiling,
the targets, a JSON summary and a PNG chart.

Usage: bench_report.py RESULTS.jsonl OUT_DIR
"""

import json
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

results_path, out = sys.argv[1], sys.argv[2]
rows = [json.loads(line) for line in open(results_path) if line.strip()]

cells = defaultdict(list)
for r in rows:
    cells[(r["db"], r["path"], r["door"], r["workload"], r["concurrency"])].append(r)


def median(key, field="throughput"):
    values = [r.get(field) for r in cells.get(key, []) if r.get(field) is not None]
    return statistics.median(values) if values else None


def p99(key):
    values = [r["latency_ms"]["p99"] for r in cells.get(key, []) if "latency_ms" in r]
    return statistics.median(values) if values else None


dbs = sorted({r["db"] for r in rows})
concurrencies = sorted({r["concurrency"] for r in rows if r["path"] in ("ceiling", "service")})
summary = {"cells": [], "targets": [], "growth": [], "peak_rss_kib": {}}
lines = []
for db in dbs:
    lines.append(f"\n{db}")
    lines.append(f"{'c':>4} {'ceiling tx/s':>13} {'rest create':>12} {'ratio':>6} {'mcp create':>11} {'mcp/rest':>8} "
                 f"{'read tx/s':>10} {'rest replay':>12} {'replay/create':>13} {'replay p99':>10}")
    for c in concurrencies:
        ceiling = median((db, "ceiling", "-", "create", c))
        read = median((db, "ceiling", "-", "read", c))
        rest = median((db, "service", "rest", "create", c))
        mcp = median((db, "service", "mcp", "create", c))
        replay = median((db, "service", "rest", "replay", c))
        replay_p99 = p99((db, "service", "rest", "replay", c))
        ratio = rest / ceiling if rest and ceiling else None
        mcp_ratio = mcp / rest if mcp and rest else None
        replay_ratio = replay / rest if replay and rest else None
        fmt = lambda v, spec: format(v, spec) if v is not None else "-"  # noqa: E731
        lines.append(f"{c:>4} {fmt(ceiling, '13.0f')} {fmt(rest, '12.0f')} {fmt(ratio, '6.2f')} {fmt(mcp, '11.0f')} "
                     f"{fmt(mcp_ratio, '8.2f')} {fmt(read, '10.0f')} {fmt(replay, '12.0f')} {fmt(replay_ratio, '13.2f')} "
                     f"{fmt(replay_p99, '8.2f')}ms")
        summary["cells"].append(dict(db=db, concurrency=c, ceiling_create=ceiling, ceiling_read=read, rest_create=rest,
                                     mcp_create=mcp, rest_replay=replay, mcp_replay=median((db, "service", "mcp", "replay", c)),
                                     rest_create_p99=p99((db, "service", "rest", "create", c)), rest_replay_p99=replay_p99,
                                     rest_over_ceiling=ratio, mcp_over_rest=mcp_ratio, replay_over_create=replay_ratio))
    rss = median((db, "server", "-", "peak_rss_kib", 0))
    summary["peak_rss_kib"][db] = rss
    lines.append(f"peak server RSS: {rss / 1024:.1f} MiB" if rss else "peak server RSS: -")
    for workload in ("create", "replay"):
        grown = [k for k in cells if k[0] == db and k[1] == "growth" and k[3] == workload]
        for key in grown:
            c = key[4]
            base = median((db, "service", "rest", workload, c))
            after = median(key)
            change = after / base - 1 if base and after else None
            summary["growth"].append(dict(db=db, workload=workload, concurrency=c, small=base, grown=after, change=change))
            lines.append(f"growth ({workload}, c={c}): {base or 0:.0f} -> {after or 0:.0f} req/s"
                         + (f" ({change:+.1%})" if change is not None else ""))

errors = [r for r in rows if r.get("errors") or (r.get("verification") and (r["verification"]["duplicates"] or r["verification"]["lost"]))]
lines.append(f"\nruns with errors, duplicates or losses: {len(errors)}")
print("\n".join(lines))
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
open(f"{out}/table.txt", "w").write("\n".join(lines) + "\n")

fig, axes = plt.subplots(len(dbs), 2, figsize=(12, 4.5 * len(dbs)), squeeze=False)
series = [("ceiling", "-", "create", "ceiling: create tx"), ("service", "rest", "create", "REST create"),
          ("service", "mcp", "create", "MCP create"), ("ceiling", "-", "read", "ceiling: replay read"),
          ("service", "rest", "replay", "REST replay"), ("service", "mcp", "replay", "MCP replay")]
for row, db in enumerate(dbs):
    for path, door, workload, label in series:
        xs = [c for c in concurrencies if median((db, path, door, workload, c)) is not None]
        axes[row][0].plot(xs, [median((db, path, door, workload, c)) for c in xs], marker="o", label=label)
        if path == "service":
            ys = [p99((db, path, door, workload, c)) for c in xs]
            axes[row][1].plot(xs, ys, marker="o", label=label)
    axes[row][0].set(title=f"{db}: throughput (median)", xlabel="concurrency", ylabel="per second", xscale="log")
    axes[row][1].set(title=f"{db}: p99 latency (median)", xlabel="concurrency", ylabel="ms", xscale="log")
    for ax in axes[row]:
        ax.set_xticks(concurrencies, [str(c) for c in concurrencies])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(f"{out}/chart.png", dpi=110)
