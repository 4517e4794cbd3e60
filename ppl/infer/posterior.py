"""The approximate posterior: per-variable marginals of q, the ELBO and its trace.

A `Posterior` is built once from a finished run (`ppl.infer.posterior_build`) or loaded from the
file it was saved to, and
never changes. Each variable has a marginal (`ppl.infer.marginals`). It also knows what a
report needs to be readable: which variables are local (one per row, token or document), which
mixture components a category selects, the names and coordinates of every axis, and the model
and data it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ppl.infer import selection

QUANTILES = (0.025, 0.975)
SUMMARY_COLUMNS = ("variable", "family", "mean", "sd", "q2.5", "q97.5")


@dataclass(repr=False)
class Posterior:
    """Results of `Model.infer`: marginals by name, the ELBO, its trace and per-factor terms."""

    marginals: dict
    elbo: float
    trace: list
    elbo_terms: dict
    iterations: int
    converged: bool
    seconds: float
    tags: tuple = ()
    levels: dict = field(default_factory=dict)
    restart: int = 0
    notes: list = field(default_factory=list)  # what the run changed on its own (damping)
    joint: list = field(default_factory=list)  # JointDraws of @joint groups
    trace_se: list = field(default_factory=list)  # standard errors of estimated trace entries (0: exact)
    scopes: dict = field(default_factory=dict)  # variable -> "global" | "local" (the analyzer's)
    components: dict = field(default_factory=dict)  # selector -> {variable: component axis}
    dims: dict = field(default_factory=dict)  # variable -> axis names of its draws
    coords: dict = field(default_factory=dict)  # axis name -> labels
    term_trace: list = field(default_factory=list)  # per sweep {term: value}, when recorded
    origin: dict = field(default_factory=dict)  # model (name, text, sha256, constants) and data source
    priors: dict = field(default_factory=dict)  # variable -> natural parameters of its own `~` statement
    observed: tuple = ()  # data the `~` statements observe (the rest are covariates)
    dataset: object = field(default=None, compare=False)  # the bound data (not saved)
    convergence: object = None  # ppl.infer.convergence.Convergence: how close to the fixed point
    interrupted: bool = False  # stopped by the user (Ctrl-C) after a completed sweep
    blocks: list = field(default_factory=list)  # BlockQ of Gaussian blocks: their members' joint q
    coverage: list = field(default_factory=list)  # mean field's sds far too narrow (ppl.infer.coverage)

    @property
    def status(self) -> str:
        """"converged", "not converged" or "interrupted, not converged"."""
        return "interrupted, not converged" if self.interrupted else \
            "converged" if self.converged else "not converged"

    def __getitem__(self, name: str):
        return self.marginals[name]

    def __contains__(self, name: str) -> bool:
        return name in self.marginals

    def draws(self, n: int, seed=None, vars=None) -> dict:  # noqa: A002
        """`n` joint draws from q, by variable: arrays of shape (n,) + the variable's shape;
        `vars` (glob patterns) keeps some variables (all by default). A partially observed data
        variable is drawn at its empty cells (from their predictive) and NaN at the observed ones
        (data, not in q)."""
        names = list(self.marginals) if vars is None else selection.chosen(self, vars)
        check_draws(n)
        rng = draws_rng(seed)
        draws = {}
        for group in self.joint:
            if group.mean in names or group.precision in names:
                draws.update(group.draws(n, rng))
        for block in self.blocks:
            if set(block.members) & set(names):
                draws.update(block.draws(n, rng))
        for name in names:
            if name not in draws:
                draws[name] = self.marginals[name].draws(n, rng)
        return {name: draws[name] for name in names}

    def draw_columns(self, n: int, seed=None) -> dict:
        """`draws` by element, as the `--draws-output` table: label (`mu[1,2]`) → list of n values
        (a latent category's as 1-based codes); a partially observed variable's empty cells only
        (its observed cells are data: no column of NaN)."""
        columns = {}
        for name, values in self.draws(n, seed).items():
            mask = getattr(self.marginals[name], "observed_mask", None)
            drawn = np.ones(values.shape[1:], dtype=bool) if mask is None else ~mask.reshape(values.shape[1:])
            index = np.argwhere(drawn)
            values = coded(self.marginals[name], values)[:, drawn]
            columns.update(zip(self.labels(name, index), values.T.tolist()))
        return columns

    def summary(self, vars=None, rows_per_variable: int | None = None):  # noqa: A002
        """The table of `summary_rows` as a pandas DataFrame, one row per element; what it
        leaves out (local variables, switched-off components) is in `.attrs["omitted"]`.
        pandas is imported here, not at startup: the CLI does without it."""
        import pandas as pd
        frame = pd.DataFrame(self.summary_rows(vars, rows_per_variable), columns=list(SUMMARY_COLUMNS))
        frame.attrs["omitted"] = selection.omitted(self, vars)
        return frame

    def summary_rows(self, vars=None, rows_per_variable: int | None = None, levels=QUANTILES) -> dict:  # noqa: A002
        """One row per element, as columns (`SUMMARY_COLUMNS` → list): variable, family, mean,
        sd and the 2.5%/97.5% quantiles (NaN for a Categorical); other quantile `levels` give
        other columns (`q50` for 0.5), all from one `quantiles` call.

        `vars` (glob patterns, a list or one comma-separated string) chooses the variables;
        by default every variable that is not local. Components that the data switched off
        are left out. `rows_per_variable` keeps the first rows of each variable (the terminal
        report); a partially observed data variable contributes its imputed cells only."""
        names = [f"q{100 * level:g}" for level in levels]
        table = {column: [] for column in ("variable", "family", "mean", "sd", *names)}
        for name in selection.chosen(self, vars):
            m = self.marginals[name]
            mean, sd = np.asarray(m.mean, dtype=float), np.asarray(m.sd, dtype=float)
            q = np.asarray(m.quantiles(levels), dtype=float)
            if q.shape[1:] != mean.shape:  # Categorical: quantiles of codes, not of probabilities
                q = np.full((len(levels),) + mean.shape, np.nan)
            reported = self.reported(name)
            index = np.argwhere(reported)[:rows_per_variable]
            table["variable"] += self.labels(name, index)
            table["family"] += [m.name] * len(index)
            for column, values in zip(list(table)[2:], (mean, sd, *q)):
                table[column] += values[reported][:rows_per_variable].tolist()
        return table

    def labels(self, name: str, index: np.ndarray) -> list[str]:
        """Labels of elements (rows of 0-based indices): on an axis that counts the levels of a
        `cat` column, and on the classes of an imputed `cat` response, its level's label (`a[site_a]`,
        ArviZ's coordinate; `y[4,setosa]`), else 1-based numbers."""
        levels = [self.coords.get(dim) for dim in self.dims.get(name, ())]
        if self.marginals[name].name in selection.CATEGORIES and name in self.levels:  # its classes' axis
            levels.append(list(self.levels[name]))
        if not any(isinstance(c, list) and c and isinstance(c[0], str) for c in levels):
            return _labels(name, index)
        def element(axis, i):
            labels = levels[axis] if axis < len(levels) else None
            return str(labels[i]) if isinstance(labels, list) and i < len(labels) else str(i + 1)
        return [f"{name}[{','.join(element(a, i) for a, i in enumerate(row))}]" for row in index.tolist()]

    def reported(self, name: str) -> np.ndarray:
        """Which elements of `mean` a table lists: all of a latent variable but its switched-off
        components, the missing cells of data."""
        return _reported(self.marginals[name]) & ~selection.off_mask(self, name)

    def size(self, name: str) -> int:
        """Number of reported elements of a variable (see `reported`)."""
        return int(np.sum(self.reported(name)))

    def report(self, vars=None, title: str | None = None) -> str:  # noqa: A002
        """The text report of `ppl infer`: the run in one paragraph, then the table."""
        from ppl.report import infer_report
        return infer_report(self, title, vars)

    def save(self, path) -> None:
        """Write the posterior as JSON (`ppl infer --output F.json`): the summary, the trace and
        q itself (families and natural parameters), with the model and data it came from."""
        from ppl.report import write_posterior
        write_posterior(self, path)

    @classmethod
    def load(cls, path, model=None) -> "Posterior":
        """Read a posterior saved by `save`; given `model` (a `Model` or a path), refuse one
        fitted to another model, pointing at the first line where the two differ."""
        from ppl.infer.saved import load
        return load(path, model)

    @property
    def parts(self) -> list:
        """(weight, posterior) of every component of q: this posterior alone, weight 1 (a grid's
        posterior has one per node)."""
        return [(1.0, self)]

    def part_models(self, model) -> list:
        """The model each part was fitted to, given the posterior's `model`."""
        return [model]

    def predict(self, new_data, model=None, na=None, seed=0):
        """Predict for new rows (`ppl.infer.predict`): the globals stay at q, the local variables of
        new groups are fitted to the new rows, every empty response cell gets its predictive mean,
        sd and 95% interval. `model` (a `Model` or a path) is checked against the one fitted;
        by default the posterior's own model text is used."""
        from ppl.infer.predict import predict
        return predict(self, new_data, model, na, seed)

    def score(self, new_data, model=None, na=None, seed=0):
        """The log predictive density log p(y_n | training data) of every observed response cell of
        `new_data`, by row and in total (`ppl.infer.predict.Score`), for model comparison."""
        from ppl.infer.predict import score
        return score(self, new_data, model, na, seed)

    def to_arviz(self, draws: int = 1000, seed=None, vars=None):  # noqa: A002
        """An `arviz.InferenceData` with `draws` draws from q of the variables `vars` (glob
        patterns; all by default), the data and the ELBO trace (see `ppl.report.arviz`)."""
        from ppl.report.arviz import to_arviz
        return to_arviz(self, draws, seed, vars)

    def plot(self, kind: str = "all", vars=None, path=None, **options):  # noqa: A002
        """Plots of the ELBO trace, marginals against priors, components (`ppl.report.plots`)."""
        from ppl.report.plots import plot
        return plot(self, kind, vars, path, **options)

    def __repr__(self) -> str:
        return (f"Posterior(elbo={self.elbo:.6f}, {self.iterations} sweeps, {self.status}, "
                f"variables={list(self.marginals)})")

    def _repr_html_(self) -> str:
        from ppl.report.html import posterior_html
        return posterior_html(self)

    def to_json(self) -> dict:
        """The JSON document of `ppl infer --output F.json` (arrays as nested lists)."""
        variables = {}
        for name, m in self.marginals.items():
            mean = np.asarray(m.mean)
            q = np.asarray(m.quantiles(QUANTILES), dtype=float)
            sd = None if m.name in selection.CATEGORIES else _list(m.sd)  # √(p(1 − p)) of the mean
            entry = {"family": m.name, "shape": list(mean.shape), "mean": _list(mean), "sd": sd}
            if q.shape[1:] == mean.shape:
                entry.update({"q2.5": _list(q[0]), "q97.5": _list(q[1])})
            else:
                entry.update({"q2.5": None, "q97.5": None})
            if name in self.levels:
                entry["levels"] = self.levels[name]
            variables[name] = entry
        return {"status": self.status, "elbo": self.elbo, "iterations": self.iterations, "converged": self.converged,
                "convergence": self.convergence.to_json() if self.convergence is not None else None,
                "levels": {name: list(labels) for name, labels in self.levels.items()},
                "seconds": self.seconds, "trace": list(self.trace), "trace_se": list(self.trace_se),
                "elbo_terms": self.elbo_terms,
                "notes": list(self.notes), "omitted": selection.omitted(self),
                **({"coverage": list(self.coverage)} if self.coverage else {}),
                "factors": [{"factor": t.factor, "variable": t.variable, "rule": t.rule, "reason": t.reason}
                            for t in self.tags],
                "variables": variables}


def coded(marginal, values: np.ndarray) -> np.ndarray:
    """Draws of a latent category as 1-based codes, as the model counts them (int32: LDA's
    12160 tokens × 1000 draws stay 49 MB; float when NaN marks observed cells); other draws as
    they are."""
    if marginal.name not in selection.CATEGORIES:  # their draws are 0-based category codes
        return values
    return values + 1 if values.dtype.kind == "f" else (values + 1).astype(np.int32)


def draws_rng(seed) -> np.random.Generator:
    """The generator of a draw: `seed` an integer ≥ 0 or None (E325, as --seed), or a Generator."""
    if not isinstance(seed, np.random.Generator):
        from ppl.infer.engine import check_seed
        check_seed(seed)
    return np.random.default_rng(seed)


def check_draws(n) -> None:
    """A number of draws is an integer ≥ 0 (E326, as `--draws`)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        from ppl.diagnostics import OptionError
        raise OptionError("E326", f"draws must be a non-negative integer, got {n!r}")


def _reported(marginal) -> np.ndarray:
    """Which elements a report shows: all of a latent variable, the missing cells of data."""
    shape = np.shape(marginal.mean)
    mask = getattr(marginal, "observed_mask", None)
    if mask is None:
        return np.ones(shape, dtype=bool)
    return ~np.broadcast_to(mask.reshape(mask.shape + (1,) * (len(shape) - mask.ndim)), shape)


def _labels(name: str, index: np.ndarray) -> list[str]:
    """`mu[2,1]` style labels (1-based) for rows of element indices."""
    if index.shape[1] == 0:
        return [name] * len(index)
    return [f"{name}[{','.join(map(str, row))}]" for row in (index + 1).tolist()]


def _list(array) -> list | float:
    array = np.asarray(array, dtype=float)
    return array.tolist()


def assemble(order: list, q: dict, joint: list) -> dict:
    """Marginals by name in `order`: a variable's own q, or a `@joint` group's two halves (mean
    then precision) where its mean is declared."""
    groups = {g.mean: g for g in joint}
    partners = {g.precision for g in joint}
    marginals = {}
    for name in order:
        if name in groups:
            marginals.update(groups[name].marginals())
        elif name in q and name not in partners:
            marginals[name] = q[name]
    return marginals


def origin(model, dataset) -> dict:
    """What a saved posterior is checked against when loaded."""
    import hashlib
    text = model.source.text
    return {"model": model.source.name, "sha256": hashlib.sha256(text.encode()).hexdigest(), "text": text,
            "constants": dict(model.overrides), "data": dataset.source}
