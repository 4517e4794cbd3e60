"""The conjugacy table: which update rule serves a (factor, latent neighbour) edge, and why.

Patterns are checked in order; the first that matches the factor's distribution, the role the
neighbour feeds, the neighbour's family and the form of the expression (see `forms`) wins.
In the spirit of NIMBLE's conjugacy table: data, not if/elif.
"""

from __future__ import annotations

from dataclasses import dataclass

GAUSSIAN = ("Normal", "MvNormal")
ANY = None


@dataclass(frozen=True)
class Pattern:
    dists: tuple | None
    roles: tuple | None
    families: tuple
    forms: tuple
    rule: str
    pair: str | None
    why: str  # formatted with {var}, {dist}, {role}, {expr}, {link}
    outcome: str | None = None  # "latent": only when the factor's own variable is latent


PATTERNS: tuple[Pattern, ...] = (
    Pattern(ANY, ANY, ("Categorical",), ("selector",), "vmp", "mixture selector",
            "`{var}` selects the component; responsibilities from expected log-likelihoods"),
    Pattern(("Normal",), ("mean",), GAUSSIAN, ("identity", "scaled", "linear"), "vmp", "Normal–Normal",
            "the mean is linear in Gaussian `{var}`"),
    Pattern(("MvNormal",), ("mean",), GAUSSIAN, ("identity", "scaled", "linear"), "vmp",
            "MvNormal–MvNormal", "the mean is linear in Gaussian `{var}`"),
    Pattern(("Normal",), ("precision",), ("Gamma",), ("identity", "scaled"), "vmp", "Normal–Gamma",
            "the precision is a multiple of Gamma `{var}`"),
    Pattern(("MvNormal",), ("precision",), ("Wishart",), ("identity", "scaled"), "vmp",
            "MvNormal–Wishart", "the precision matrix is a multiple of Wishart `{var}`"),
    Pattern(("MvNormal",), ("precision",), ("Gamma",), ("scaled",), "vmp", "MvNormal–Gamma",
            "the precision matrix is linear in Gamma `{var}` (a fixed matrix times it, or diag({var}))"),
    Pattern(("Gamma",), ("rate",), ("Gamma",), ("identity", "scaled"), "vmp", "Gamma–Gamma",
            "the rate is a multiple of Gamma `{var}`"),
    Pattern(("Poisson",), ("rate",), ("Gamma",), ("identity", "scaled"), "vmp", "Poisson–Gamma",
            "the rate is a multiple of Gamma `{var}`"),
    Pattern(("Exponential",), ("rate",), ("Gamma",), ("identity", "scaled"), "vmp", "Exponential–Gamma",
            "the rate is a multiple of Gamma `{var}`"),
    Pattern(("Bernoulli", "Binomial"), ("p",), ("Beta",), ("identity",), "vmp", "{dist}–Beta",
            "the probability is Beta `{var}` itself"),
    Pattern(("Categorical", "Multinomial"), ("probs",), ("Dirichlet",), ("identity",), "vmp",
            "{dist}–Dirichlet", "the probabilities are Dirichlet `{var}` itself"),
    Pattern(("Bernoulli", "Binomial"), ("p",), GAUSSIAN, ("link:logistic", "link:probit"), "ncvmp", None,
            "{link} link is not conjugate to Gaussian `{var}`; 1-D expectations are exact by quadrature"),
    Pattern(("Poisson",), ("rate",), GAUSSIAN, ("link:exp",), "ncvmp", None,
            "exp link is not conjugate to Gaussian `{var}`; the expectations are closed-form"),
    Pattern(("Categorical",), ("probs",), GAUSSIAN, ("link:softmax",), "laplace", None,
            "softmax link is not conjugate to Gaussian `{var}` and the category is latent; Laplace VI "
            "(Wang & Blei) gives each group of `{var}` a full-covariance Gaussian", "latent"),
    Pattern(("Categorical",), ("probs",), GAUSSIAN, ("link:softmax",), "ncvmp", None,
            "softmax link is not conjugate to Gaussian `{var}`; its expectations are a deterministic "
            "quadrature over the K − 1 logit differences"),
    Pattern(("Multinomial",), ("probs",), GAUSSIAN, ("link:softmax",), "cvi", None,
            "softmax link is not conjugate to Gaussian `{var}`; its K-dimensional expectation "
            "is estimated by Monte Carlo"),
    Pattern(("OrderedLogistic",), ("eta",), GAUSSIAN, ("identity", "scaled", "linear"), "ncvmp", None,
            "the cumulative-logit likelihood is not conjugate to Gaussian `{var}`; 1-D expectations are exact "
            "by quadrature"),
)


def match(dist: str, role: str, family: str, form: str, outcome: str = "observed") -> Pattern | None:
    for p in PATTERNS:
        if p.outcome is not None and p.outcome != outcome:
            continue
        if p.dists is not None and dist not in p.dists:
            continue
        if p.roles is not None and role not in p.roles:
            continue
        if family in p.families and form in p.forms:
            return p
    return None


# Which rules an annotation may ask for on an edge, given what the table says of it.
def applicable(rule: str, dist: str, family: str, form: str, default: str, in_block: bool = False) -> str | None:
    """None when `rule` can serve the edge, else the reason it cannot."""
    gaussian = family in GAUSSIAN
    logistic = form == "link:logistic"
    # a Gaussian through a scalar link, or a conjugate one (where the expansion rules are exact)
    ordinal = gaussian and dist == "OrderedLogistic"  # log f = two llp terms of the linear η
    scalar = gaussian and (form.startswith("link:") and form != "link:softmax" or default == "vmp") or ordinal
    softmax = gaussian and form == "link:softmax" and dist == "Categorical"  # K scalar sites per row
    checks = {
        "vmp": (default == "vmp", "the edge is not conjugate"),
        "ncvmp": (scalar or softmax, "NC-VMP needs a Gaussian neighbour reached through a scalar link "
                                     "or a Categorical's softmax"),
        "cvi": (gaussian or family in ("Gamma", "Dirichlet", "Beta"),
                "CVI needs a Gaussian, Gamma, Beta or Dirichlet neighbour"),
        "bound:jaakkola": (gaussian and logistic and dist in ("Bernoulli", "Binomial"),
                           "the Jaakkola bound is for Bernoulli/Binomial with a logistic link"),
        "bound:bohning": (gaussian and (logistic or form == "link:softmax"),
                          "the Böhning bound is for logistic and softmax links"),
        "bound:piecewise": (gaussian and logistic and dist in ("Bernoulli", "Binomial") or ordinal,
                            "piecewise bounds are for Bernoulli/Binomial with a logistic link and OrderedLogistic"),
        "bound:stick": (gaussian and form == "link:softmax" and dist == "Categorical",
                        "stick-breaking is for Categorical with a softmax link"),
        "laplace": (scalar or softmax, "Laplace VI needs a Gaussian neighbour reached through a scalar link "
                                       "or a Categorical's softmax"),
        "delta": (scalar or softmax, "delta VI needs a Gaussian neighbour reached through a scalar link "
                                     "or a Categorical's softmax"),
        "ssmf": (in_block, "SSMF is for edges inside a block of dependent local variables"),
    }
    ok, reason = checks.get(rule, (False, "unknown rule"))
    return None if ok else reason
