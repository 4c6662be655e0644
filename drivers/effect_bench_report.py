"""Draws the effect benchmark's heatmap: one panel per judging number
(extra effects, missing effects, false deduplications, unresolved
outcomes), fault points down, strategy/backend across (then, per backend
but Redmine, blind retry through this service under each likely-duplicate
guard: `local/a+warn`, `honour/a+confirm`, ...; Redmine's columns, b to d,
come last, as in results.json), each cell's count written in it; cells that
cannot exist are grey, cells not run blank.

Usage: effect_bench_report.py RESULTS.json OUT.png
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

results_path, out = sys.argv[1], sys.argv[2]
report = json.load(open(results_path))
cells = report["cells"]
meta = report["meta"]

rows, columns = [], []
for cell in cells:
    if cell["row"] not in rows:
        rows.append(cell["row"])
    if cell["column"] not in columns:
        columns.append(cell["column"])
by_key = {(c["row"], c["column"]): c for c in cells}

PANELS = [
    ("extra", "extra effects"),
    ("missing", "missing effects"),
    ("false_dedup", "false deduplications"),
    ("unresolved", "unresolved outcomes"),
]
cmap = LinearSegmentedColormap.from_list("bad", ["#f4fbf4", "#f6c28b", "#d7301f"])

fig, axes = plt.subplots(2, 2, figsize=(max(20, 1.2 * len(columns)), 15))
for panel, (field, title) in enumerate(PANELS):
    ax = axes[panel // 2][panel % 2]
    values, labels = [], []
    for row in rows:
        line, text = [], []
        for column in columns:
            cell = by_key.get((row, column), {"status": "not_run"})
            status = cell["status"]
            if status == "measured":
                m = cell["metrics"]
                # Per intent, so the control (two effects each) reads alike.
                line.append(m[field] / max(m["intents"], 1))
                text.append(str(m[field]))
            else:
                line.append(float("nan"))
                text.append({"not_applicable": "n/a", "failed": "err"}.get(status, ""))
        values.append(line)
        labels.append(text)
    ax.imshow(values, cmap=cmap, vmin=0, vmax=1, aspect="auto")
    for i, text in enumerate(labels):
        for j, t in enumerate(text):
            if t == "n/a":
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, color="#d9d9d9"))
            ax.text(j, i, t, ha="center", va="center", fontsize=10,
                    color="#555555" if t == "n/a" else "black")
    ax.set_title(title)
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels(columns, rotation=60, ha="right", fontsize=9)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{i}. {r.replace('-', ' ')}" for i, r in enumerate(rows)], fontsize=10)
    # Backend groups, in the order the columns come: local | honour |
    # ignore | redmine; within one, the grid's columns : the guard columns.
    previous = None
    for j, column in enumerate(columns):
        backend = column.split("/")[0]
        if previous is not None and backend != previous[0]:
            ax.axvline(j - 0.5, color="black", linewidth=1.2)
        elif previous is not None and "+" in column and "+" not in previous[1]:
            ax.axvline(j - 0.5, color="black", linewidth=0.8, linestyle="--")
        previous = (backend, column)

fig.suptitle(
    f"effect-bench: counts per cell, {meta['intents_per_cell']} intent(s) each (colour: per intent, "
    f"0 green to 1 or more red; grey: cannot exist; blank: not run), seed {meta['seed']}\n"
    f"columns backend/strategy: a blind retry, b native key or no retry, "
    f"c this service + naive client, d this service + tickets-client "
    f"(redmine: a real Redmine behind the fault proxy, b to d); "
    f"a+GUARD: blind retry through this service with DUPLICATE_GUARD=GUARD "
    f"(confirm-new: the caller says confirm_new on a meant second intent)",
    fontsize=13,
)
fig.tight_layout(rect=(0, 0, 1, 0.95))
fig.savefig(out, dpi=90)
print(f"wrote {out}")
