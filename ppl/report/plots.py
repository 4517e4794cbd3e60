"""Plots of a posterior (the `ppl[plot]` extra: matplotlib, imported here only).

- `elbo`: the ELBO after every sweep and, when the run recorded them (`--trace-terms`,
  `record_terms=True`), each factor's term and entropy as its distance to its final value;
- `marginals`: histograms of draws from q for the first elements of chosen variables, against
  draws from the variable's own `~` statement at the final q of its parents (the prior itself
  when its parameters are constants);
- `components`: for a mixture or topic model, the expected rows per component (switched-off
  ones marked) and each selected variable's posterior mean per component, as a heat map, or
  the top labels per component when the axis has labels (LDA's words).

Figures are made without pyplot (no global state, no display needed), so they render anywhere.
"""

from __future__ import annotations

import numpy as np

from ppl.infer import selection
from ppl.infer.marginals import FamilyMarginal

KINDS = ("elbo", "marginals", "components")
ELEMENTS = 6  # panels per variable in the marginal plot
DRAWS = 4000
TOP = 6  # labels per component in the component view


def plot(posterior, kind: str = "all", vars=None, path=None, seed: int = 0):  # noqa: A002
    """A matplotlib Figure with the plots of `kind` ("all": every one that applies); written
    to `path` (.png, .svg, .pdf) when given."""
    from ppl.diagnostics import OptionError
    from ppl.report.extras import optional
    kinds = [k for k in KINDS if kind in ("all", k) and (k != "components" or posterior.components)]
    if not kinds:
        raise OptionError("E345", f"plot kind {kind!r}: the model has no mixture components" if kind == "components"
                          else f"plot kind {kind!r} is not one of all, {', '.join(KINDS)}")
    if path is not None:  # before the drawing: matplotlib would refuse a suffix or a folder after it
        from pathlib import Path
        from ppl.cli_checks import IMAGE_SUFFIXES, check_output
        check_output("path", Path(path), [], IMAGE_SUFFIXES)
    Figure = optional("matplotlib.figure", "plot").Figure  # after the checks of the input: E345 needs no matplotlib
    names = selection.chosen(posterior, vars)
    if not names and kind == "marginals":
        hidden = ", ".join(posterior.marginals)
        raise OptionError("E345", f"plot kind 'marginals': no variable is listed by default ({hidden} are local); "
                          "name them with --vars")
    kinds = [k for k in kinds if k != "marginals" or names]  # "all" of a model of locals only: no marginals
    heights = {"elbo": 3.0, "marginals": 2.2 * len(names), "components": 2.6 * _component_rows(posterior)}
    width = 10 if kinds != ["marginals"] else 2 + 1.6 * min(ELEMENTS, max(posterior.size(n) for n in names))
    fig = Figure(figsize=(width, sum(heights[k] for k in kinds)), layout="constrained")
    subfigures = np.atleast_1d(fig.subfigures(len(kinds), 1, height_ratios=[heights[k] for k in kinds]))
    for sub, name in zip(subfigures, kinds):
        {"elbo": _elbo, "marginals": _marginals, "components": _components}[name](sub, posterior, names, seed)
    if path is not None:
        fig.savefig(path, dpi=80)
    return fig


def _elbo(fig, posterior, names, seed) -> None:
    sweeps = np.arange(1, len(posterior.trace) + 1)
    axes = fig.subplots(1, 2 if posterior.term_trace else 1, squeeze=False)[0]
    axes[0].plot(sweeps, posterior.trace, marker=".", color="black")
    axes[0].set(title=f"ELBO {posterior.elbo:.6g}", xlabel="sweep", ylabel="ELBO")
    if posterior.term_trace:
        final = posterior.term_trace[-1]
        for term in final:  # the last sweep is the reference: its distance is 0, not drawn
            distance = [abs(t[term] - final[term]) for t in posterior.term_trace[:-1]]
            axes[1].plot(sweeps[:-1], np.maximum(distance, 1e-300), label=term)
        axes[1].set(yscale="log", title="each term: |value − final value|", xlabel="sweep")
        axes[1].legend(fontsize=6, loc="upper right")
    fig.suptitle("convergence")


def _marginals(fig, posterior, names, seed) -> None:
    rng = np.random.default_rng(seed)
    columns = max(1, min(ELEMENTS, max(posterior.size(n) for n in names)))
    axes = fig.subplots(len(names), columns, squeeze=False)
    for row, name in zip(axes, names):
        draws = posterior.draws(DRAWS, rng.integers(2**32), vars=[name])[name]
        prior = posterior.priors.get(name)
        prior_draws = None
        if prior is not None:
            prior_draws = FamilyMarginal(posterior.marginals[name].family, prior).draws(DRAWS, rng)
        reported = posterior.reported(name)
        if reported.ndim != draws.ndim - 1:  # a Categorical's or a chain's draws: codes, no probabilities axis
            reported = ~np.isnan(draws).all(axis=0)  # NaN: observed cells of data
        listed = np.argwhere(reported)[:columns]
        for ax, index in zip(row, listed):
            values = draws[(slice(None),) + tuple(index)]
            _histogram(ax, values, prior_draws[(slice(None),) + tuple(index)] if prior_draws is not None else None)
            ax.set_title(f"{name}[{','.join(str(i + 1) for i in index)}]" if len(index) else name, fontsize=8)
            ax.tick_params(labelsize=6)
        for ax in row[len(listed):]:
            ax.set_axis_off()
    axes[0][0].legend(fontsize=6)
    fig.suptitle("marginals of q (filled) against the prior (line)")


def _histogram(ax, values, prior) -> None:
    low, high = np.quantile(values, [0.001, 0.999])
    pad = 0.5 * (high - low) or 0.5
    edges = np.linspace(low - pad, high + pad, 41)
    ax.hist(values, bins=edges, density=True, color="tab:blue", alpha=0.6, label="q")
    if prior is not None:
        counts, _ = np.histogram(prior, bins=edges)
        ax.stairs(counts / (len(prior) * np.diff(edges)), edges, color="tab:orange", label="prior")
    ax.set_yticks([])


def _component_rows(posterior) -> int:
    return sum(1 + len([v for v in members if np.ndim(posterior[v].mean) > 1 or v not in posterior.priors])
               for members in posterior.components.values()) if posterior.components else 0


def _components(fig, posterior, names, seed) -> None:
    rows = []
    for selector, members in posterior.components.items():
        rows.append((selector, None))
        rows += [(selector, v) for v in posterior.marginals if v in members and np.ndim(posterior[v].mean) > 1]
    axes = fig.subplots(len(rows), 1, squeeze=False)[:, 0]
    for ax, (selector, variable) in zip(axes, rows):
        counts = selection.component_counts(posterior, selector)
        off = counts < selection.OFF_COUNT
        labels = [f"{k + 1}" + (" (off)" if o else "") for k, o in enumerate(off)]
        if variable is None:
            ax.bar(range(len(counts)), counts, color=np.where(off, "lightgrey", "tab:blue"))
            ax.set(title=f"expected rows per component of {selector}", xticks=range(len(counts)))
            ax.set_xticklabels(labels, fontsize=7)
            continue
        axis = posterior.components[selector][variable]
        mean = np.moveaxis(np.asarray(posterior[variable].mean, dtype=float), axis, 0)
        mean = mean.reshape(len(counts), -1)
        dims = posterior.dims.get(variable, ())
        rest = dims[axis + 1] if len(dims) == axis + 2 else None
        words = posterior.coords.get(rest) if rest else None
        if words is not None and isinstance(words[0], str) and mean.shape[1] > 3 * TOP:
            _top_labels(ax, mean, words, labels, variable)
        else:
            _heat_map(ax, np.where(off[:, None], np.nan, mean), labels, variable,
                      np.shape(posterior[variable].mean)[:axis] + np.shape(posterior[variable].mean)[axis + 1:])
    fig.suptitle("components")


def _heat_map(ax, mean, labels, variable, rest: tuple) -> None:
    """E[variable] with components as columns and its other elements as rows, values written in."""
    ax.imshow(mean.T, aspect="auto", cmap="viridis")
    ax.set_title(f"E[{variable}] per component", fontsize=9)
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    index = np.argwhere(np.ones(rest, dtype=bool)) + 1
    ax.set_yticks(range(len(index)), [f"[{','.join(map(str, i))}]" for i in index.tolist()], fontsize=6)
    if mean.size <= 120:
        for (k, j), value in np.ndenumerate(mean):
            if np.isfinite(value):
                ax.text(k, j, f"{value:.3g}", ha="center", va="center", fontsize=6, color="white")


def _top_labels(ax, mean, words, labels, variable) -> None:
    """The `TOP` most probable labels of every live component, as a text table."""
    ax.set_axis_off()
    ax.set_title(f"top {TOP} of {variable} per component", fontsize=9)
    live = [k for k, label in enumerate(labels) if "off" not in label]
    for row, k in enumerate(live):
        top = np.argsort(mean[k])[::-1][:TOP]
        text = "  ".join(f"{words[i]} {mean[k, i]:.3f}" for i in top)
        ax.text(0, 1 - (row + 1) / (len(live) + 1), f"{labels[k]}: {text}", fontsize=7, family="monospace",
                transform=ax.transAxes)
