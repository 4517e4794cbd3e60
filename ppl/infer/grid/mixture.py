"""The marginals of a grid's q and the ELBO of its weights.

q(h, rest) = Σ_j w_j u_j(h) q_j(rest): the marginal of any other variable is the mixture
Σ_j w_j q_j, whose mean and sd are exact moments and whose quantiles are found by bisection on
its CDF, bracketed by the components' own quantiles at the same level (at the smallest of them
every component's CDF is at most the level, at the largest at least). The grid variable's
marginal is Σ_j w_j u_j, u_j uniform on cell j (of log h for a positive h): piecewise constant,
so its moments and quantiles are closed forms.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ppl import families as fam
from ppl.families.base import Marginal, qs_column
from ppl.infer.marginals import FamilyMarginal, ImputedMarginal, KernelMarginal

BISECTIONS = 100  # halvings of the bracket at most; stops when every bracket is at rounding


def mixture_elbo(scores) -> tuple[float, np.ndarray]:
    """The weights w ∝ exp(c_j) that maximise Σ_j w_j c_j + H(w), and that maximum, log Σ_j exp(c_j),
    for scores c_j = ELBO_j + log width_j (docs/rules/grid.md)."""
    scores = np.asarray(scores, dtype=float)
    total = float(special.logsumexp(scores))
    return total, np.exp(scores - total)


def mixture(components: list, weights: np.ndarray):
    """The marginal Σ_j w_j q_j of one variable: a Categorical stays one (its probabilities
    mixed), an imputed response's empty cells one predictive mixture, anything else a
    `MixtureMarginal`; None when its quantiles have no exact CDF."""
    first = components[0]
    if isinstance(first, FamilyMarginal) and isinstance(first.family, fam.Categorical):
        probs = np.tensordot(weights, np.stack([c.mean for c in components]), 1)
        with np.errstate(divide="ignore"):
            return FamilyMarginal(first.family, np.log(probs), first.observed_mask)
    if all(isinstance(c, ImputedMarginal) for c in components):  # empty cells: one mixture of the predictives
        from ppl.infer.predict.predictive import mixed
        return ImputedMarginal(first.family, first.natural, first.observed_mask,
                               mixed([(w, c.predictive) for w, c in zip(weights, components)]))
    if any(_law(c) is None for c in components):
        return None
    return MixtureMarginal(components, weights)


def _law(marginal):
    """(elementwise `Marginal`, whether it is the law of log x) of a component, or None."""
    if isinstance(marginal, KernelMarginal):
        return Marginal("normal", marginal.mean, marginal.sd), False
    if not isinstance(marginal, FamilyMarginal):
        return None
    try:
        law = marginal.family._marginal(np.asarray(marginal.natural, dtype=float))
    except NotImplementedError:
        return None
    return (law, isinstance(marginal.family, fam.LogNormal)) if isinstance(law, Marginal) else None


class MixtureMarginal:
    """Σ_j w_j q_j over the nodes of a grid, elementwise in the variable's shape."""

    def __init__(self, components: list, weights: np.ndarray):
        self.components, self.weights = components, np.asarray(weights, dtype=float)
        self.observed_mask = components[0].observed_mask

    @property
    def name(self) -> str:
        return f"{self.components[0].name} mix"

    def _weighted(self, arrays) -> np.ndarray:
        return np.tensordot(self.weights, np.stack([np.asarray(a, dtype=float) for a in arrays]), 1)

    @property
    def mean(self) -> np.ndarray:
        return self._weighted([c.mean for c in self.components])

    @property
    def sd(self) -> np.ndarray:
        """√(Σ_j w_j (sd_j² + (mean_j − mean)²)): the law of total variance."""
        mean = self.mean
        return np.sqrt(self._weighted([np.asarray(c.sd) ** 2 + (np.asarray(c.mean) - mean) ** 2
                                       for c in self.components]))

    def cdf(self, x) -> np.ndarray:
        """P(X ≤ x) elementwise, x of shape (levels,) + the variable's shape."""
        laws = [_law(c) for c in self.components]
        log = laws[0][1]
        x = np.log(np.maximum(x, 1e-300)) if log else x
        return sum(w * law.cdf(x) for w, (law, _) in zip(self.weights, laws))

    def quantiles(self, qs) -> np.ndarray:
        qs = np.asarray(qs, dtype=float)
        shape = np.shape(self.mean)
        each = np.stack([np.broadcast_to(c.quantiles(qs), qs.shape + shape) for c in self.components])
        lo, hi = each.min(axis=0), each.max(axis=0)
        target = qs_column(qs, len(shape))
        for _ in range(BISECTIONS):
            if np.all(hi - lo <= 4 * np.finfo(float).eps * np.maximum(np.abs(hi), 1e-300)):
                break
            mid = 0.5 * (lo + hi)
            below = self.cdf(mid) < target
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return 0.5 * (lo + hi)

    def draws(self, n: int, rng) -> np.ndarray:
        """n draws: a node by its weight, then a draw of that node's q."""
        node = rng.choice(len(self.weights), size=n, p=self.weights)
        out = np.empty((n,) + np.shape(self.components[0].draws(1, rng))[1:])
        for j in np.unique(node):
            out[node == j] = self.components[j].draws(int(np.sum(node == j)), rng)
        return out

    def params(self) -> dict:
        return {"weights": self.weights, "components": [c.params() for c in self.components]}


class CellMarginal:
    """q(h) = Σ_j w_j u_j(h), u_j uniform on [z_j − δ/2, z_j + δ/2] in z = log h (a positive h)
    or z = h: the grid variable's marginal."""

    name = "grid"
    observed_mask = None

    def __init__(self, centres, width: float, weights, log_scale: bool):
        self.centres, self.width = np.asarray(centres, dtype=float), float(width)
        self.weights, self.log_scale = np.asarray(weights, dtype=float), log_scale

    def _moment(self, k: int) -> float:
        lo, hi = self.centres - self.width / 2, self.centres + self.width / 2
        if self.log_scale:  # E[h^k] over a cell uniform in log h: (e^{k hi} − e^{k lo}) / (k δ)
            each = (np.exp(k * hi) - np.exp(k * lo)) / (k * self.width)
        else:
            each = (hi ** (k + 1) - lo ** (k + 1)) / ((k + 1) * self.width)
        return float(self.weights @ each)

    @property
    def mean(self) -> np.ndarray:
        return np.asarray(self._moment(1))

    @property
    def sd(self) -> np.ndarray:
        mean = self._moment(1)
        return np.asarray(np.sqrt(max(self._moment(2) - mean ** 2, 0.0)))

    def quantiles(self, qs) -> np.ndarray:
        """The inverse of the piecewise-linear CDF of z, through h = e^z for a positive h."""
        qs = np.asarray(qs, dtype=float)
        upper = np.cumsum(self.weights)
        j = np.minimum(np.searchsorted(upper, qs), len(upper) - 1)
        below = upper[j] - self.weights[j]
        z = self.centres[j] - self.width / 2 + self.width * np.clip((qs - below) / self.weights[j], 0.0, 1.0)
        return np.exp(z) if self.log_scale else z

    def draws(self, n: int, rng) -> np.ndarray:
        node = rng.choice(len(self.weights), size=n, p=self.weights)
        return self.at(node, rng)

    def at(self, node: np.ndarray, rng) -> np.ndarray:
        """Draws of h in the cells `node` (one draw per entry)."""
        z = self.centres[node] + self.width * (rng.random(len(node)) - 0.5)
        return np.exp(z) if self.log_scale else z

    def params(self) -> dict:
        nodes = np.exp(self.centres) if self.log_scale else self.centres
        return {"nodes": nodes, "weights": self.weights, "width": self.width,
                "scale": "log" if self.log_scale else "linear"}
