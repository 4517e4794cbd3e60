"""The terminal reports of `ppl predict` and `ppl score`."""

from __future__ import annotations

from itertools import groupby

import numpy as np

from ppl.report.summary import ROWS_PER_VARIABLE, number
from ppl.report.tables import format_table


def prediction_report(prediction, title: str) -> str:
    """The groups of the new data, then the table: the first rows of every variable."""
    seen = prediction.seen
    lines = [title]
    if prediction.group_labels:
        lines.append(f"{len(seen)} groups of {prediction.group_dim}: {int(np.sum(seen >= 0))} seen in training "
                     f"(kept at their q), {int(np.sum(seen < 0))} new (fitted to their observed rows)")
    table = prediction.table()
    header = ["variable", "kind", "mean", "sd", "2.5%", "97.5%"]
    classes = "mode" in table.columns  # a categorical response: its most probable class and that class's p
    if classes:
        header += ["mode", "p(mode)"]
        chance = table[[c for c in table.columns if c.startswith("p[")]].max(axis=1)
    rows = []
    for variable, group in groupby(table.itertuples(), key=lambda row: row[1].partition("[")[0]):
        group = list(group)
        for row in group[:ROWS_PER_VARIABLE]:
            cells = [row[1], row[2], *map(number, row[3:7])]
            if classes:
                mode = row[7]
                cells += [mode, number(chance[row[0]])] if isinstance(mode, str) else ["", ""]
            rows.append(cells)
        if len(group) > ROWS_PER_VARIABLE:
            rows.append([f"(+{len(group) - ROWS_PER_VARIABLE} more)"] + [""] * (len(header) - 1))
    lines += ["", format_table(header, rows)] if rows else \
        ["", "nothing to predict: the new data give every response cell and have no local variables"]
    return "\n".join(lines) + "\n"


def score_report(score, title: str) -> str:
    """The total log predictive density, per cell, and per response."""
    if not score.count:
        return (f"{title}\n\nnothing to score: the new data leave every response cell empty "
                f"({', '.join(score.cells)}); give the observed values to score them\n")
    lines = [title, f"log predictive density {score.total:.6f} over {score.count} cells in {len(score.rows)} rows "
                    f"({score.total / score.count:.6g} per cell)"]
    if len(score.cells) > 1:
        lines += [f"  {name}: {np.nansum(v):.6f} over {int(np.sum(~np.isnan(v)))} cells"
                  for name, v in score.cells.items()]
    return "\n".join(lines) + "\n"
