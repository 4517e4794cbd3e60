"""The terminal report of `ppl infer`: the run in one paragraph, then a table of marginals,
then one line for each thing the table leaves out (local variables, switched-off components)."""

from __future__ import annotations

from itertools import groupby

import numpy as np

from ppl.infer import selection

from ppl.report.tables import format_table

ROWS_PER_VARIABLE = 8


def infer_report(posterior, title: str | None = None, vars=None) -> str:  # noqa: A002
    timed_out = getattr(posterior.convergence, "stopped_by", "") == "time limit"
    advice = "raise --time-limit" if timed_out else "raise --max-iter"
    status = {"not converged": f"did NOT converge ({advice} or check the model)"}.get(posterior.status,
                                                                                 posterior.status)
    rules = sorted({t.rule for t in posterior.tags})
    lines = [title] if title else []
    lines += [f"ELBO {posterior.elbo:.6f} after {posterior.iterations} sweeps ({status}), "
              f"{posterior.seconds:.2f} s; rules: {', '.join(rules)}"]
    if posterior.convergence is not None:
        lines.append(f"stopped at: {posterior.convergence.describe()}")
    lines += [f"note: {n}" for n in posterior.notes] + [""]
    table = posterior.summary_rows(vars, ROWS_PER_VARIABLE)
    rows = []
    by_variable = groupby(zip(*table.values()), key=lambda row: row[0].partition("[")[0])
    for variable, group in by_variable:
        shown = [[label, family, *map(number, numbers)] for label, family, *numbers in group]
        rows += shown
        more = posterior.size(variable) - len(shown)
        if more > 0:
            rows.append([f"(+{more} more)", "", "", "", "", ""])
    if rows:
        lines.append(format_table(["variable", "family", "mean", "sd", "2.5%", "97.5%"], rows))
    omitted = selection.omitted(posterior, vars)
    if omitted:
        lines += [""] + omitted
    return "\n".join(lines) + "\n"


def number(x: float) -> str:
    """Four significant digits; `-` for a missing value."""
    return "-" if np.isnan(x) else f"{x:.4g}"
