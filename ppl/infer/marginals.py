"""Marginals of q, one object per reported variable: `mean`, `sd`, `quantiles(qs)`, `draws(n)`
and `params()`, each in the variable's shape (plates + event).

A variable in an exponential family is a `FamilyMarginal` over its natural parameters. A
`@joint` Normal–Wishart group (`JointDraws`) is reported as two marginals: the mean's is a
Student-t, the precision's a Wishart (or Gamma); its draws stay joint.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ppl import families as fam
from ppl.families.base import Marginal, chol_inverse, qs_column


class FamilyMarginal:
    """q of one variable in an exponential family (natural parameters with plate axes). For a
    partially observed data variable (`observed_mask`) the observed cells are data, not in q:
    NaN in every statistic and draw."""

    def __init__(self, family, natural: np.ndarray, observed_mask=None):
        self.family = family
        self.natural = natural
        self.observed_mask = observed_mask  # partially observed data: True where a cell was observed

    @property
    def name(self) -> str:
        return self.family.name

    @property
    def shape(self) -> tuple:
        """Of one draw, plates + event, from λ's: no statistic computed (an MvNormal's mean solves
        its D × D system; a discrete chain's runs a forward–backward)."""
        return np.shape(self.natural)[:-1] + tuple(self.family.event_shape)

    @property
    def mean(self) -> np.ndarray:
        return self._kept("mean")

    @property
    def sd(self) -> np.ndarray:
        return self._kept("sd")

    def _kept(self, statistic: str) -> np.ndarray:
        """The family's `statistic` of λ, computed once per λ and kept read-only: a report asks
        for a mean several times (the elements it lists, the switched-off components, the table),
        and an MvNormal's solves its D × D system each time (48 ms at D = 1,000)."""
        kept = self.__dict__.get("_" + statistic)
        if kept is None or kept[0] is not self.natural:
            value = self._unobserved(getattr(self.family, statistic)(self.natural))
            if isinstance(value, np.ndarray) and value.ndim:  # a scalar stays one (round(post["p"].mean, 4))
                value = value.copy()
                value.flags.writeable = False
            kept = self.__dict__["_" + statistic] = (self.natural, value)
        return kept[1]

    def quantiles(self, qs) -> np.ndarray:
        if type(self.family) in (fam.Normal, fam.MvNormal):  # Normal(mean, sd) margins, of the kept statistics
            return Marginal("normal", self.mean, self.sd).ppf(qs_column(np.asarray(qs), np.ndim(self.mean)))
        return self._unobserved(self.family.quantiles(self.natural, np.asarray(qs)), lead=1)

    def draws(self, n: int, rng) -> np.ndarray:
        return self._unobserved(self.family.sample(self.natural, rng, n), lead=1)

    def params(self) -> dict:
        return self.family.params(self.natural)

    def _unobserved(self, values, lead: int = 0):
        """`values` (`lead` axes, then the plates, then any event axes) NaN at observed cells."""
        mask = self.observed_mask
        if mask is None or np.ndim(values) < lead + mask.ndim:  # quantiles a family does not have
            return values
        where = mask.reshape((1,) * lead + mask.shape + (1,) * (values.ndim - lead - mask.ndim))
        return np.where(where, np.nan, values)


class ImputedMarginal(FamilyMarginal):
    """A partially observed response whose empty cells are reported by their posterior predictive
    under q (`predictive`: a `ppl.infer.predict.predictive.Mixture` over the empty cells in
    row-major order, as `predict` computes it), not by q's own factor: under mean field q(y) =
    N(E[η], 1/E[τ]) leaves out Var[η] and the spread of τ. `natural` stays q's own."""

    def __init__(self, family, natural: np.ndarray, observed_mask, predictive):
        super().__init__(family, natural, observed_mask)
        self.predictive = predictive

    @property
    def name(self) -> str:
        return "predictive"

    def _at_empty(self, values, lead: int = 0) -> np.ndarray:
        """Arrays (lead..., empty cells) placed into the variable's shape, NaN at observed cells."""
        values = np.asarray(values, dtype=float)
        out = np.full(values.shape[:lead] + self.observed_mask.shape, np.nan)
        out[(slice(None),) * lead + (~self.observed_mask,)] = values
        return out

    @property
    def mean(self) -> np.ndarray:
        return self._at_empty(self.predictive.mean())

    @property
    def sd(self) -> np.ndarray:
        return self._at_empty(np.sqrt(self.predictive.var()))

    def quantiles(self, qs) -> np.ndarray:
        return self._at_empty([self.predictive.quantile(q) for q in np.atleast_1d(qs)], lead=1)

    def draws(self, n: int, rng) -> np.ndarray:
        return self._at_empty(self.predictive.sample(n, rng), lead=1)


class KernelMarginal(FamilyMarginal):
    """q of one Gaussian vector held in a structured form (ppl.infer.held_gaussian.HeldGaussian): mean, sd,
    quantiles and draws in O(N²D); the natural parameters (and so `params`) are formed, D × D,
    only when asked for."""

    def __init__(self, family, kernel):
        self.family, self.kernel, self.observed_mask = family, kernel, None

    @property
    def natural(self) -> np.ndarray:
        return self.kernel.natural()[0]

    @property
    def shape(self) -> tuple:
        return np.shape(self.kernel.mean)  # λ is D × D here

    @property
    def mean(self) -> np.ndarray:
        return self.kernel.mean

    @property
    def sd(self) -> np.ndarray:
        return self.kernel.sd

    def quantiles(self, qs) -> np.ndarray:
        return Marginal("normal", self.mean, self.sd).ppf(qs_column(np.asarray(qs), 1))

    def draws(self, n: int, rng) -> np.ndarray:
        return self.kernel.sample(rng, n)


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

    def marginals(self) -> dict:
        """The group as two marginals: a Student-t mean and a Wishart (or Gamma) precision."""
        family, nat = self.family, self.natural
        p = family.params(nat)
        df = p["dof"] - family.dim + 1
        scale = chol_inverse(p["scale"]) / (p["beta"] * df)[..., None, None]
        wishart = family.precision_natural(nat)
        if self.scalar:  # one-dimensional: Normal–Gamma
            w = fam.Wishart(1).params(wishart)
            gamma = fam.Gamma().natural(shape=0.5 * w["dof"], rate=0.5 / w["scale"][..., 0, 0])
            return {self.mean: _ScalarT(p["mean"], scale, df), self.precision: FamilyMarginal(fam.Gamma(), gamma)}
        return {self.mean: StudentTMarginal(p["mean"], scale, df),
                self.precision: FamilyMarginal(fam.Wishart(family.dim), wishart)}
