"""First-order Gaussian chains: a Normal variable x[1..T] written as

    x[1] ~ Normal(m1, p1)
    for t in 2..T { x[t] ~ Normal(c * x[t-1] + b, p) }

with c, b, m1, p1, p free of x (data, constants or other latent variables). Its q is kept as ONE
Gaussian over the whole chain (tridiagonal precision): the exact conditional of x given the rest
of q has that form, so the structure costs O(T) and loses nothing, whereas q factorised over the
elements cannot see how neighbouring states move together (the AR coefficient of a chain seen
through coin flips stays at 0). The analyzer finds the pattern by itself: x is one declared
variable, and the statements above say it is a Markov chain.
"""

from __future__ import annotations

from dataclasses import dataclass

from ppl.graph import forms
from ppl.lang import ast


@dataclass(frozen=True)
class Chain:
    """A latent Normal whose q is one Gaussian Markov chain."""

    variable: str
    first: str  # the factor of x[1]
    transition: str  # the factor of x[t] given x[t-1]
    reason: str


def find_chains(model) -> tuple[Chain, ...]:
    return tuple(c for c in (_chain(model, name) for name in model.variables) if c is not None)


def _chain(model, name: str) -> Chain | None:
    var = model.variables[name]
    if var.kind != "latent" or var.dist != "Normal" or var.event_rank or len(var.plates) != 1:
        return None
    own = model.factors_of(name)
    first = [f for f in own if not f.plates and _is_number(f.target.indices, 1)]
    rest = [f for f in own if f not in first]
    if len(own) != 2 or len(first) != 1 or not _is_transition(rest[0], name, var.plates[0], model):
        return None
    dim = var.plates[0]
    return Chain(name, first[0].name, rest[0].name,
                 f"q({name}) is one Gaussian over the chain `{first[0].name}`, `{rest[0].name}` "
                 f"(tridiagonal precision, smoothed in O({dim}))")


def _is_number(indices, value) -> bool:
    return len(indices) == 1 and isinstance(indices[0], ast.Number) and indices[0].value == value


def _is_transition(factor, name: str, dim, model) -> bool:
    """`for t in 2..T { x[t] ~ Normal(mean, ...) }` with the mean linear in x through x[t-1] only."""
    if factor.dist.name != "Normal" or len(factor.plates) != 1 or "mean" not in factor.args:
        return False
    plate = factor.plates[0]
    end = (None, dim) if isinstance(dim, int) else (dim, 0)
    index = factor.target.indices
    if plate.lo != (None, 2) or tuple(plate.hi) != end or not (
            len(index) == 1 and isinstance(index[0], ast.Name) and index[0].id == plate.var):
        return False
    mean = forms.inline(factor.args["mean"], model.definitions)
    reads = [n for n in ast.walk(mean) if isinstance(n, ast.Index) and isinstance(n.base, ast.Name)
             and n.base.id == name]
    names = [n for n in ast.walk(mean) if isinstance(n, ast.Name) and n.id == name]
    others = (forms.inline(e, model.definitions) for role, e in factor.args.items() if role != "mean")
    return (len(reads) == len(names) == 1 and _is_lag(reads[0].indices, plate.var)
            and forms.degree(mean, name) == 1 and not any(forms.reads(e, name) for e in others))


def _is_lag(indices, loop: str) -> bool:
    """`[t-1]`"""
    if len(indices) != 1 or not isinstance(indices[0], ast.BinOp):
        return False
    e = indices[0]
    return (e.op == "-" and isinstance(e.left, ast.Name) and e.left.id == loop
            and isinstance(e.right, ast.Number) and e.right.value == 1)
