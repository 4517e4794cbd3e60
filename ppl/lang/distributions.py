"""The distributions of the language: parameters, supports and event shapes, as data.

The checker reads this table for arity, argument order, keyword alternatives and the support
of constant arguments; the data binder for the support of observed values; the analyzer for
the role each argument plays. Parameterisations are stated in docs/language.md.
"""

from __future__ import annotations

from dataclasses import dataclass

# Supports, shared by parameters and values. Each names a set and how to say it to a user.
SUPPORTS = {
    "real": "a real number",
    "positive": "a positive number",
    "unit": "a probability in [0, 1]",
    "open_unit": "a number in (0, 1)",
    "simplex": "a probability vector (non-negative, summing to 1)",
    "positive_vector": "a vector of positive numbers",
    "pd": "a symmetric positive-definite matrix",
    "binary": "0 or 1",
    "count": "a non-negative integer",
    "category": "a category",
    "counts": "a vector of non-negative integers",
    "dof": "degrees of freedom greater than the dimension minus one",
    "ordered": "finite, strictly increasing cutpoints",
    "ordinal": "an ordered category 1..K (K = the number of cutpoints plus one)",
}


@dataclass(frozen=True)
class Param:
    """One parameter: its role name, support, and rank relative to the event (0, 1 or 2)."""

    role: str
    support: str
    rank: int = 0


@dataclass(frozen=True)
class Alternative:
    """A keyword that may replace a positional parameter (``Normal(m, sd=2)``)."""

    keyword: str
    replaces: str
    support: str
    rank: int = 0


@dataclass(frozen=True)
class Distribution:
    """A distribution of the language.

    `event` says where the event shape comes from: ``"scalar"``, or ``(role, k)`` meaning the
    last k dimensions of that parameter (``("mean", 1)`` for MvNormal).
    """

    name: str
    params: tuple[Param, ...]
    value: str
    event: object = "scalar"
    alternatives: tuple[Alternative, ...] = ()
    latent: bool = True

    def roles(self) -> tuple[str, ...]:
        return tuple(p.role for p in self.params)

    def param(self, role: str) -> Param:
        for p in self.params:
            if p.role == role:
                return p
        for a in self.alternatives:
            if a.keyword == role:
                return Param(a.keyword, a.support, a.rank)
        raise KeyError(role)


DISTRIBUTIONS: dict[str, Distribution] = {d.name: d for d in (
    Distribution("Normal", (Param("mean", "real"), Param("precision", "positive")), "real",
                 alternatives=(Alternative("sd", "precision", "positive"),
                               Alternative("var", "precision", "positive"))),
    Distribution("MvNormal", (Param("mean", "real", 1), Param("precision", "pd", 2)), "real",
                 event=("mean", 1),
                 alternatives=(Alternative("cov", "precision", "pd", 2),)),
    Distribution("Gamma", (Param("shape", "positive"), Param("rate", "positive")), "positive"),
    Distribution("Wishart", (Param("dof", "dof"), Param("scale", "pd", 2)), "pd",
                 event=("scale", 2)),
    Distribution("Dirichlet", (Param("alpha", "positive_vector", 1),), "simplex",
                 event=("alpha", 1)),
    Distribution("Beta", (Param("a", "positive"), Param("b", "positive")), "open_unit"),
    Distribution("Categorical", (Param("probs", "simplex", 1),), "category"),
    Distribution("Bernoulli", (Param("p", "unit"),), "binary"),
    Distribution("Binomial", (Param("trials", "count"), Param("p", "unit")), "count", latent=False),
    Distribution("Poisson", (Param("rate", "positive"),), "count", latent=False),
    Distribution("Exponential", (Param("rate", "positive"),), "positive", latent=False),
    Distribution("Multinomial", (Param("trials", "count"), Param("probs", "simplex", 1)), "counts",
                 event=("probs", 1), latent=False),
    # cumulative logit: P(y ≤ k) = logistic(cut[k] − eta)
    Distribution("OrderedLogistic", (Param("eta", "real"), Param("cut", "ordered", 1)), "ordinal", latent=False),
)}


def value_type(dist: Distribution) -> str:
    """The element type of a draw: what a latent variable of this distribution holds."""
    return {"category": "cat", "ordinal": "cat", "binary": "bool", "count": "int", "counts": "int"}.get(dist.value, "real")
