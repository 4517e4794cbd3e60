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
             f"{posterior.seconds:.2f} s; rules: {', '.join(rules)}", ""]
    table = posterior.summary()
    rows = []
    for variable, group in table.groupby(table["variable"].str.replace(r"\[.*", "", regex=True), sort=False):
        for _, row in group.head(ROWS_PER_VARIABLE).iterrows():
            rows.append([row["variable"], row["family"], _num(row["mean"]), _num(row["sd"]),
                         _num(row["q2.5"]), _num(row["q97.5"])])
        if len(group) > ROWS_PER_VARIABLE:
            rows.append([f"(+{len(group) - ROWS_PER_VARIABLE} more)", "", "", "",
                         "", ""])
    lines.append(format_table(["variable", "family", "mean", "sd", "2.5%", "97.5%"], rows))
    return "\n".join(lines) + "\n"


def _num(x) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "-"
    return f"{x:.4g}"
