"""`@joint` on `mu ~ Normal(m0, beta0 * tau)`: keep q(mu, tau) as one Normal–Gamma (or
Normal–Wishart) factor instead of q(mu) q(tau). Valid when the pair is a conjugate prior and
every other factor reads the two together, as the mean and precision of one Gaussian."""

from __future__ import annotations

from dataclasses import dataclass

from ppl.diagnostics import ModelError
from ppl.graph import forms
from ppl.lang import ast

PRECISION_FAMILY = {"Normal": "Gamma", "MvNormal": "Wishart"}


@dataclass(frozen=True)
class Group:
    """Latent variables that share one factor of q."""

    mean: str
    precision: str
    family: str  # "NormalWishart" (a Normal–Gamma is its one-dimensional case)
    reason: str


def joint_groups(model) -> tuple[Group, ...]:
    groups = []
    for factor in model.factors:
        note = next((n for n in factor.annotations if n.rule == "joint"), None)
        if note is not None:
            groups.append(_group(model, factor, note))
    return tuple(groups)


def _group(model, factor, note) -> Group:
    def fail(why):
        raise ModelError("E284", f"`@joint` cannot apply to `{factor.name}`: {why}", span=note.span,
                         hint="write the prior as `mu ~ Normal(m0, beta0 * tau)` with `tau ~ Gamma(a, b)`")

    dist = factor.dist.name
    target = factor.target.name
    if dist not in PRECISION_FAMILY or model.variables[target].kind != "latent":
        fail("it needs a latent Normal or MvNormal")
    if "precision" not in factor.args:
        fail("the precision must be given as `precision`")
    mean = forms.inline(factor.args["mean"], model.definitions)
    precision = forms.inline(factor.args["precision"], model.definitions)
    latent = {n for n, v in model.variables.items() if v.kind == "latent"}
    if any(forms.reads(mean, v) for v in latent):
        fail("its mean must not depend on latent variables")
    readers = [v for v in latent if forms.reads(precision, v)]
    if len(readers) != 1 or forms.form(precision, readers[0]) not in ("identity", "scaled"):
        fail("its precision must be a multiple of one latent Gamma/Wishart variable")
    partner = readers[0]
    if model.variables[partner].dist != PRECISION_FAMILY[dist]:
        fail(f"`{partner}` is {model.variables[partner].dist}; the conjugate pair needs {PRECISION_FAMILY[dist]}")
    if model.variables[partner].plates != model.variables[target].plates:
        fail(f"`{target}` and `{partner}` must have the same plates")
    for own in model.factors_of(partner):
        if any(forms.reads(forms.inline(e, model.definitions), v) for e in own.args.values() for v in latent):
            fail(f"the prior of `{partner}` must have constant parameters")
    for other in model.factors:
        if other is factor or other.target.name == partner:
            continue
        reads_mean = any(forms.reads(e, target) for e in other.args.values())
        reads_prec = any(forms.reads(e, partner) for e in other.args.values())
        if not (reads_mean or reads_prec):
            continue
        m, p = other.args.get("mean"), other.args.get("precision")
        paired = (m is not None and p is not None and forms.form(m, target) == "identity"
                  and forms.form(p, partner) in ("identity", "scaled") and _same_index(m, p, partner))
        if other.dist.name != dist or not paired:
            fail(f"`{other.name}` must read `{target}` and `{partner}` together, as mean and precision "
                 "with the same index")
    family = "NormalWishart"
    return Group(target, partner, family,
                 f"q({target}, {partner}) is one Normal–{PRECISION_FAMILY[dist]} factor (@joint)")


def _same_index(mean: ast.Expr, precision: ast.Expr, partner: str) -> bool:
    def index_of(expr, name=None):
        for node in ast.walk(expr):
            if isinstance(node, ast.Index) and isinstance(node.base, ast.Name) and (name is None or node.base.id == name):
                return tuple(ast.text(i) for i in node.indices)
        return ()
    return index_of(mean) == index_of(precision, partner)
