"""The terminal report of `ppl infer`: the run in one paragraph, then a table of marginals."""

from __future__ import annotations

from itertools import groupby

import numpy as np

from ppl.report.tables import format_table

ROWS_PER_VARIABLE = 8


def infer_report(posterior, title: str) -> str:
    status = {"not converged": "did NOT converge (raise --max-iter or check the model)"}.get(posterior.status,
                                                                                         posterior.status)
    rules = sorted({t.rule for t in posterior.tags})
    lines = [title,
             f"ELBO {posterior.elbo:.6f} after {posterior.iterations} sweeps ({status}), "
             f"{posterior.seconds:.2f} s; rules: {', '.join(rules)}"]
    lines += [f"note: {n}" for n in posterior.notes] + [""]
    table = posterior.summary_rows(ROWS_PER_VARIABLE)
    rows = []
    by_variable = groupby(zip(*table.values()), key=lambda row: row[0].partition("[")[0])
    for variable, group in by_variable:
        shown = [[label, family, *map(_num, numbers)] for label, family, *numbers in group]
        rows += shown
        more = posterior.size(variable) - len(shown)
        if more > 0:
            rows.append([f"(+{more} more)", "", "", "", "", ""])
    lines.append(format_table(["variable", "family", "mean", "sd", "2.5%", "97.5%"], rows))
    return "\n".join(lines) + "\n"


def _num(x: float) -> str:
    return "-" if np.isnan(x) else f"{x:.4g}"
