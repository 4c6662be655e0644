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


def over(numerator, denominator):
    return numerator / denominator if numerator is not None and denominator else None


# The performance issue's targets, each computed from this run's medians,
# so that the numbers compared were measured side by side. `>=` targets are
# ratios, `<` targets milliseconds or MiB. "Growth within 10%" is grown /
# small throughput >= 0.9: a gain is no miss. A target whose cells this run
# did not measure (the smoke run has no c=32 or 64) is reported as not
# measured, never as met.
PG, SQLITE = "postgres", "sqlite"


def target_specs(dbs, concurrencies):
    specs = [
        ("REST replay / point-read ceiling, PostgreSQL, c=32", PG, 32, ">=", 1.75,
         over(median((PG, "service", "rest", "replay", 32)), median((PG, "ceiling", "-", "read", 32)))),
        ("REST replay p99 (ms), PostgreSQL, c=32", PG, 32, "<", 2.0, p99((PG, "service", "rest", "replay", 32))),
        ("REST create / pgbench create ceiling, PostgreSQL, c=32", PG, 32, ">=", 0.9,
         over(median((PG, "service", "rest", "create", 32)), median((PG, "ceiling", "-", "create", 32)))),
        ("REST create p99 (ms), SQLite, c=64", SQLITE, 64, "<", 25.0, p99((SQLITE, "service", "rest", "create", 64))),
        ("REST create / create ceiling, SQLite, c=32", SQLITE, 32, ">=", 1.0,
         over(median((SQLITE, "service", "rest", "create", 32)), median((SQLITE, "ceiling", "-", "create", 32)))),
    ]
    for db in dbs:
        for c in concurrencies:
            specs.append((f"MCP create / REST create, {db}, c={c}", db, c, ">=", 0.85,
                          over(median((db, "service", "mcp", "create", c)), median((db, "service", "rest", "create", c)))))
        for c in concurrencies:
            specs.append((f"MCP replay / REST replay, {db}, c={c}", db, c, ">=", 0.7,
                          over(median((db, "service", "mcp", "replay", c)), median((db, "service", "rest", "replay", c)))))
    for db in dbs:
        rss = median((db, "server", "-", "peak_rss_kib", 0))
        top = max(concurrencies) if concurrencies else 0
        note = "" if top == 64 else f" (largest c in this run: {top})"
        specs.append((f"peak server RSS (MiB) through c=64, {db}{note}", db, top, "<", 64.0,
                      rss / 1024 if rss else None))
    for db in dbs:
        seeded = median((db, "growth", "-", "seeded", 0), "operations")
        note = "" if seeded == 1_000_000 else f" (seeded {seeded or 0:,.0f}, not 1,000,000)"
        for workload in ("create", "replay"):
            for key in sorted(k for k in cells if k[:4] == (db, "growth", "rest", workload)):
                c = key[4]
                specs.append((f"growth: REST {workload} grown/small, {db}, c={c}{note}", db, c, ">=", 0.9,
                              over(median(key), median((db, "service", "rest", workload, c)))))
    return specs


def verdict(op, goal, value):
    if value is None:
        return None
    return value >= goal if op == ">=" else value < goal


dbs = sorted({r["db"] for r in rows})
concurrencies = sorted({r["concurrency"] for r in rows if r["path"] in ("ceiling", "service")})
summary = {"cells": [], "targets": [], "growth": [], "peak_rss_kib": {}, "peak_rss_after_growth_kib": {}}
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
    rss_grown = median((db, "server", "-", "peak_rss_after_growth_kib", 0))
    summary["peak_rss_kib"][db] = rss
    summary["peak_rss_after_growth_kib"][db] = rss_grown
    lines.append(f"peak server RSS: {rss / 1024:.1f} MiB" if rss else "peak server RSS: -")
    if rss_grown:
        lines.append(f"peak server RSS after the growth case: {rss_grown / 1024:.1f} MiB")
    for workload in ("create", "replay"):
        grown = [k for k in cells if k[:4] == (db, "growth", "rest", workload)]
        for key in grown:
            c = key[4]
            base = median((db, "service", "rest", workload, c))
            after = median(key)
            change = after / base - 1 if base and after else None
            summary["growth"].append(dict(db=db, workload=workload, concurrency=c, small=base, grown=after, change=change))
            lines.append(f"growth ({workload}, c={c}): {base or 0:.0f} -> {after or 0:.0f} req/s"
                         + (f" ({change:+.1%})" if change is not None else ""))

lines.append("\ntargets (this run's medians)")
for name, db, c, op, goal, value in target_specs(dbs, concurrencies):
    met = verdict(op, goal, value)
    word = {True: "MET", False: "MISSED", None: "NOT MEASURED"}[met]
    shown = f"{value:.2f}" if value is not None else "-"
    lines.append(f"  {word:<12} {name}: {shown} (target {'≥' if op == '>=' else '<'} {goal:g})")
    summary["targets"].append(dict(target=name, db=db, concurrency=c, value=value, op=op, goal=goal, met=met))

failed = [r for r in rows if r.get("errors")]
broken = [r for r in rows if (r.get("verification") or {}).get("violation")]
lines.append(f"\nruns with failed requests: {len(failed)}; runs that broke the promise "
             f"(duplicates, losses, dangling records): {len(broken)}")
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
