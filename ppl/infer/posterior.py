"""The approximate posterior: per-variable marginals of q, the ELBO and its trace.

A `Posterior` is built once from a finished run and never changes. Each variable has a
marginal with `mean`, `sd`, `quantiles(qs)` and `draws(n)`, all in the variable's shape
(plates + event). A `@joint` group is reported as its two marginals: the Gaussian's is a
Student-t, the precision's a Wishart (or Gamma).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import special

from ppl import families as fam
from ppl.families.base import chol_inverse
from ppl.infer.factors.joint import group_key

QUANTILES = (0.025, 0.975)
SUMMARY_COLUMNS = ("variable", "family", "mean", "sd", "q2.5", "q97.5")


class FamilyMarginal:
    """q of one variable in an exponential family (natural parameters with plate axes)."""

    def __init__(self, family, natural: np.ndarray, observed_mask=None):
        self.family = family
        self.natural = natural
        self.observed_mask = observed_mask  # partially observed data: True where a cell was observed

    @property
    def name(self) -> str:
        return self.family.name

    @property
    def mean(self) -> np.ndarray:
        return self.family.mean(self.natural)

    @property
    def sd(self) -> np.ndarray:
        return self.family.sd(self.natural)

    def quantiles(self, qs) -> np.ndarray:
        return self.family.quantiles(self.natural, np.asarray(qs))

    def draws(self, n: int, rng) -> np.ndarray:
        return self.family.sample(self.natural, rng, n)

    def params(self) -> dict:
        return self.family.params(self.natural)


class StudentTMarginal:
    """The marginal of μ under a Normal–Wishart q: a multivariate Student-t with location
    `mean`, scale matrix `scale` = W⁻¹/(β·df) and df = ν − D + 1 degrees of freedom (its
    variance is infinite when df ≤ 2, as for a component the data switched off)."""

    name = "StudentT"

    def __init__(self, mean, scale, df):
        self._mean = mean
        self.scale = scale
        self.df = df

    @property
    def mean(self):
        return self._mean

    def _marginal_scale(self):
        return np.sqrt(np.diagonal(self.scale, axis1=-2, axis2=-1))

    @property
    def sd(self):
        df = self.df[..., None]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(df > 2, self._marginal_scale() * np.sqrt(df / np.maximum(df - 2, 1e-300)), np.inf)

    def quantiles(self, qs):
        qs = np.asarray(qs).reshape((-1,) + (1,) * self._mean.ndim)
        return self._mean + self._marginal_scale() * special.stdtrit(self.df[..., None], qs)

    def draws(self, n, rng):
        chol = np.linalg.cholesky(self.scale)
        z = rng.standard_normal((n,) + self._mean.shape)
        g = rng.chisquare(self.df, size=(n,) + self.df.shape) / self.df
        return self._mean + np.einsum("...ij,...j->...i", chol, z) / np.sqrt(g)[..., None]

    def params(self) -> dict:
        return {"mean": self._mean, "scale": self.scale, "df": self.df}


class _ScalarT(StudentTMarginal):
    """A one-dimensional Student-t (the mean of a Normal–Gamma), shaped like its plates."""

    def __init__(self, mean, scale, df):
        super().__init__(mean[..., 0], scale, df)

    def _marginal_scale(self):
        return np.sqrt(self.scale[..., 0, 0])

    @property
    def sd(self):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.df > 2, self._marginal_scale() * np.sqrt(self.df / np.maximum(self.df - 2, 1e-300)),
                            np.inf)

    def quantiles(self, qs):
        qs = np.asarray(qs).reshape((-1,) + (1,) * self._mean.ndim)
        return self._mean + self._marginal_scale() * special.stdtrit(self.df, qs)

    def draws(self, n, rng):
        return self._mean + self._marginal_scale() * rng.standard_t(self.df, size=(n,) + np.shape(self._mean))


@dataclass
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
    interrupted: bool = False  # stopped by the user (Ctrl-C) after a completed sweep

    @property
    def status(self) -> str:
        """"converged", "not converged" or "interrupted, not converged"."""
        return "interrupted, not converged" if self.interrupted else \
            "converged" if self.converged else "not converged"

    def __getitem__(self, name: str):
        return self.marginals[name]

    def __contains__(self, name: str) -> bool:
        return name in self.marginals

    def draws(self, n: int, seed=None) -> dict:
        """`n` joint draws from q, by variable: arrays of shape (n,) + the variable's shape."""
        rng = np.random.default_rng(seed)
        draws = {}
        for group in self.joint:
            draws.update(group.draws(n, rng))
        for name, m in self.marginals.items():
            if name not in draws:
                draws[name] = m.draws(n, rng)
        return draws

    def draw_columns(self, n: int, seed=None) -> dict:
        """`draws` by element, as the `--draws-output` table: label (`mu[1,2]`) → list of n values."""
        columns = {}
        for name, values in self.draws(n, seed).items():
            index = np.argwhere(np.ones(values.shape[1:], dtype=bool))
            columns.update(zip(_labels(name, index), values.reshape(n, -1).T.tolist()))
        return columns

    def summary(self, rows_per_variable: int | None = None):
        """The table of `summary_rows` as a pandas DataFrame, one row per element. pandas is
        imported here, not at startup: the CLI does without it (a third of a second saved)."""
        import pandas as pd
        return pd.DataFrame(self.summary_rows(rows_per_variable), columns=list(SUMMARY_COLUMNS))

    def summary_rows(self, rows_per_variable: int | None = None) -> dict:
        """One row per element, as columns (`SUMMARY_COLUMNS` → list): variable, family, mean,
        sd and the 2.5%/97.5% quantiles (NaN for a Categorical).

        `rows_per_variable` keeps the first rows of each variable (the terminal report); a
        partially observed data variable contributes its imputed cells only."""
        table = {column: [] for column in SUMMARY_COLUMNS}
        for name, m in self.marginals.items():
            mean, sd = np.asarray(m.mean, dtype=float), np.asarray(m.sd, dtype=float)
            q = np.asarray(m.quantiles(QUANTILES), dtype=float)
            if q.shape[1:] != mean.shape:  # Categorical: quantiles of codes, not of probabilities
                q = np.full((2,) + mean.shape, np.nan)
            reported = _reported(m)
            index = np.argwhere(reported)[:rows_per_variable]
            table["variable"] += _labels(name, index)
            table["family"] += [m.name] * len(index)
            for column, values in zip(SUMMARY_COLUMNS[2:], (mean, sd, q[0], q[1])):
                table[column] += values[reported][:rows_per_variable].tolist()
        return table

    def size(self, name: str) -> int:
        """Number of reported elements of a variable (imputed cells only for data)."""
        return int(np.sum(_reported(self.marginals[name])))

    def to_json(self) -> dict:
        """The JSON document of `ppl infer --output F.json` (arrays as nested lists)."""
        variables = {}
        for name, m in self.marginals.items():
            mean = np.asarray(m.mean)
            q = np.asarray(m.quantiles(QUANTILES), dtype=float)
            entry = {"family": m.name, "shape": list(mean.shape), "mean": _list(mean), "sd": _list(m.sd)}
            if q.shape[1:] == mean.shape:
                entry.update({"q2.5": _list(q[0]), "q97.5": _list(q[1])})
            else:
                entry.update({"q2.5": None, "q97.5": None})
            if name in self.levels:
                entry["levels"] = self.levels[name]
            variables[name] = entry
        return {"status": self.status, "elbo": self.elbo, "iterations": self.iterations, "converged": self.converged,
                "levels": {name: list(labels) for name, labels in self.levels.items()},
                "seconds": self.seconds, "trace": list(self.trace), "trace_se": list(self.trace_se),
                "elbo_terms": self.elbo_terms,
                "notes": list(self.notes),
                "factors": [{"factor": t.factor, "variable": t.variable, "rule": t.rule, "reason": t.reason}
                            for t in self.tags],
                "variables": variables}


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


class JointDraws:
    """Draws from a Normal–Wishart factor of q: Λ from its Wishart, then μ | Λ ~ N(m, (βΛ)⁻¹)."""

    def __init__(self, mean: str, precision: str, family, natural, scalar: bool):
        self.mean, self.precision = mean, precision
        self.family, self.natural, self.scalar = family, natural, scalar

    def draws(self, n: int, rng) -> dict:
        p = self.family.params(self.natural)
        lam = fam.Wishart(self.family.dim).sample(self.family.precision_natural(self.natural), rng, n)
        cov = chol_inverse(p["beta"][..., None, None] * lam)
        z = rng.standard_normal(lam.shape[:-1])
        mu = p["mean"] + np.einsum("...ij,...j->...i", np.linalg.cholesky(cov), z)
        if self.scalar:
            return {self.mean: mu[..., 0], self.precision: lam[..., 0, 0]}
        return {self.mean: mu, self.precision: lam}


def build_posterior(problem, run, analysis) -> Posterior:
    """Marginals for every latent variable (groups split in two) and imputed data cells."""
    state = run.state
    model = problem.model
    marginals = {}
    groups = {g.mean: g for g in analysis.groups}
    partners = {g.precision for g in analysis.groups}
    for name in model.variables:
        if name in groups:
            marginals.update(_split_group(problem, state, groups[name]))
        elif name in partners:
            continue
        elif name in state.natural:
            nat = state.natural[name].reshape(problem.shapes[name] + (-1,))
            mask = problem.dataset.masks.get(name)
            marginals[name] = FamilyMarginal(problem.families[name], nat, mask)
    joint = [JointDraws(g.mean, g.precision, problem.families[group_key(g)],
                        state.natural[group_key(g)].reshape(problem.shapes[group_key(g)] + (-1,)),
                        model.variables[g.mean].dist == "Normal") for g in analysis.groups]
    return Posterior(marginals, run.elbo, run.trace, run.elbo_terms, run.iterations, run.converged,
                     run.seconds, analysis.tags, dict(problem.dataset.levels), run.restart, list(run.warnings),
                     joint, run.trace_se, run.interrupted)


def _split_group(problem, state, group) -> dict:
    key = group_key(group)
    family = problem.families[key]
    nat = state.natural[key].reshape(problem.shapes[key] + (-1,))
    p = family.params(nat)
    df = p["dof"] - family.dim + 1
    scale = chol_inverse(p["scale"]) / (p["beta"] * df)[..., None, None]
    wishart = family.precision_natural(nat)
    if problem.model.variables[group.mean].dist == "Normal":  # one-dimensional: Normal–Gamma
        w = fam.Wishart(1).params(wishart)
        gamma = fam.Gamma().natural(shape=0.5 * w["dof"], rate=0.5 / w["scale"][..., 0, 0])
        return {group.mean: _ScalarT(p["mean"], scale, df), group.precision: FamilyMarginal(fam.Gamma(), gamma)}
    return {group.mean: StudentTMarginal(p["mean"], scale, df),
            group.precision: FamilyMarginal(fam.Wishart(family.dim), wishart)}
