"""The terminal report of `ppl infer`: the run in one paragraph, then a table of marginals."""

from __future__ import annotations

import numpy as np

from ppl.report.tables import format_table

ROWS_PER_VARIABLE = 8


def infer_report(posterior, title: str) -> str:
    status = "converged" if posterior.converged else "did NOT converge (raise --max-iter or check the model)"
    rules = sorted({t.rule for t in posterior.tags})
    lines = [title,
             f"ELBO {posterior.elbo:.6f} after {posterior.iterations} sweeps ({status}), "
             f"{posterior.seconds:.2f} s; rules: {', '.join(rules)}"]
    lines += [f"note: {n}" for n in posterior.notes] + [""]
    table = posterior.summary(ROWS_PER_VARIABLE)
    rows = []
    for variable, group in table.groupby(table["variable"].str.replace(r"\[.*", "", regex=True), sort=False):
        for row in group.itertuples(index=False):
            rows.append([row.variable, row.family, _num(row.mean), _num(row.sd), _num(row[4]), _num(row[5])])
        more = posterior.size(variable) - len(group)
        if more > 0:
            rows.append([f"(+{more} more)", "", "", "", "", ""])
    lines.append(format_table(["variable", "family", "mean", "sd", "2.5%", "97.5%"], rows))
    return "\n".join(lines) + "\n"


def _num(x) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "-"
    return f"{x:.4g}"
