"""`Posterior._repr_html_`: the run in one line, the summary table, and what it leaves out, for
notebooks (Jupyter shows this instead of the repr)."""

from __future__ import annotations

from html import escape

from ppl.infer import selection
from ppl.report.summary import number


def posterior_html(posterior, vars=None) -> str:  # noqa: A002
    status = "converged" if posterior.converged else "<b>did not converge</b>"
    head = (f"<p><b>ELBO {posterior.elbo:.6f}</b> after {posterior.iterations} sweeps ({status}), "
            f"{posterior.seconds:.2f} s; rules: {escape(', '.join(sorted({t.rule for t in posterior.tags})))}</p>")
    notes = "".join(f"<p>note: {escape(n)}</p>" for n in posterior.notes)
    table = posterior.summary_rows(vars)
    columns = ("variable", "family", "mean", "sd", "2.5%", "97.5%")
    header = "".join(f"<th>{c}</th>" for c in columns)
    rows = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in (label, family, *map(number, values)))
                   + "</tr>" for label, family, *values in zip(*table.values()))
    omitted = "".join(f"<li>{escape(line)}</li>" for line in selection.omitted(posterior, vars))
    return (f"<div>{head}{notes}<table><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>"
            + (f"<ul>{omitted}</ul>" if omitted else "") + "</div>")
