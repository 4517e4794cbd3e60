"""First-order chains whose q is kept as ONE chain. Gaussian: a Normal variable x[1..T] written as

    x[1] ~ Normal(m1, p1)
    for t in 2..T { x[t] ~ Normal(c * x[t-1] + b, p) }

with c, b, m1, p1, p free of x (data, constants or other latent variables). Its q is kept as ONE
Gaussian over the whole chain (tridiagonal precision): the exact conditional of x given the rest
of q has that form, so the structure costs O(T) and loses nothing, whereas q factorised over the
elements cannot see how neighbouring states move together (the AR coefficient of a chain seen
through coin flips stays at 0). The analyzer finds the pattern by itself: x is one declared
variable, and the statements above say it is a Markov chain.

Discrete (a hidden Markov model): a Categorical variable z[1..T] written as

    z[1] ~ Categorical(pi)
    for t in 2..T { z[t] ~ Categorical(A[z[t-1]]) }      # optionally @sequences(by=seq)

with pi and the rows of A free of z. Its q is one discrete chain per sequence (forward–backward);
`@sequences(by=seq)` restarts the chain at every row whose `seq` differs from the row before,
where z is drawn like z[1].
"""

from __future__ import annotations

from dataclasses import dataclass

from ppl.diagnostics import ModelError
from ppl.graph import forms
from ppl.lang import ast


@dataclass(frozen=True)
class Chain:
    """A latent variable whose q is one Markov chain (Gaussian, or discrete per sequence)."""

    variable: str
    first: str  # the factor of x[1]
    transition: str  # the factor of x[t] given x[t-1]
    reason: str
    family: str = "NormalChain"  # or "CategoricalChain"
    sequences: str | None = None  # the data column naming each row's sequence (discrete chains)


def find_chains(model) -> tuple[Chain, ...]:
    found = (_chain(model, name) or _discrete_chain(model, name) for name in model.variables)
    chains = tuple(c for c in found if c is not None)
    transitions = {c.transition for c in chains if c.family == "CategoricalChain"}
    for factor in model.factors:  # `@sequences` means something on a discrete chain's transition only
        note = next((n for n in factor.annotations if n.rule == "sequences"), None)
        if note is not None and factor.name not in transitions:
            raise ModelError("E286", f"`@sequences` on `{factor.name}`, which is not the transition of a discrete "
                             "chain", span=note.span,
                             hint="put it after `z[t] ~ Categorical(A[z[t-1]])` inside `for t in 2..T`")
    return chains


def _chain(model, name: str) -> Chain | None:
    pair = _two_statements(model, name, "Normal")
    if pair is None or not _is_transition(pair[1], name, model.variables[name].plates[0], model):
        return None
    first, transition = pair
    dim = model.variables[name].plates[0]
    return Chain(name, first.name, transition.name,
                 f"q({name}) is one Gaussian over the chain `{first.name}`, `{transition.name}` "
                 f"(tridiagonal precision, smoothed in O({dim}))")


def _two_statements(model, name: str, dist: str):
    """(the statement of x[1], the other one) of a latent `dist` variable with one plate and
    exactly two statements, one of them `x[1] ~ ...` outside any loop; else None."""
    var = model.variables[name]
    if var.kind != "latent" or var.dist != dist or var.event_rank or len(var.plates) != 1:
        return None
    own = model.factors_of(name)
    first = [f for f in own if not f.plates and _is_number(f.target.indices, 1)]
    if len(own) != 2 or len(first) != 1:
        return None
    return first[0], next(f for f in own if f is not first[0])


def _discrete_chain(model, name: str) -> Chain | None:
    pair = _two_statements(model, name, "Categorical")
    if pair is None or forms.reads(forms.inline(pair[0].args["probs"], model.definitions), name):
        return None
    first, transition = pair
    dim = model.variables[name].plates[0]
    if not _loops_from_two(transition, dim) or not _selects_by_lag(transition, name, model):
        return None
    sequences = _sequence_column(transition, model, dim)
    per = f"one chain per sequence of `{sequences}`" if sequences else "one chain"
    return Chain(name, first.name, transition.name,
                 f"q({name}) is {per} over `{first.name}`, `{transition.name}` (forward–backward, "
                 f"O({dim} K²))", "CategoricalChain", sequences)


def _loops_from_two(factor, dim) -> bool:
    """`for t in 2..T { x[t] ~ ... }` over the variable's whole plate."""
    if len(factor.plates) != 1:
        return False
    plate = factor.plates[0]
    end = (None, dim) if isinstance(dim, int) else (dim, 0)
    index = factor.target.indices
    return (plate.lo == (None, 2) and tuple(plate.hi) == end and len(index) == 1
            and isinstance(index[0], ast.Name) and index[0].id == plate.var)


def _selects_by_lag(factor, name: str, model) -> bool:
    """`Categorical(A[..., z[t-1], ...])`: the probabilities are a row of a latent array chosen by
    z[t-1] (and possibly data), and z is read nowhere else."""
    if factor.dist.name != "Categorical":
        return False
    probs = forms.inline(factor.args["probs"], model.definitions)
    if not isinstance(probs, ast.Index) or not isinstance(probs.base, ast.Name):
        return False
    reads = [i for i in probs.indices if forms.reads(i, name)]
    uses = [n for n in ast.walk(probs) if isinstance(n, ast.Name) and n.id == name]
    lag = reads[0] if len(reads) == 1 else None
    return (len(uses) == 1 and isinstance(lag, ast.Index) and isinstance(lag.base, ast.Name)
            and lag.base.id == name and _is_lag(lag.indices, factor.plates[0].var)
            and model.variables[probs.base.id].kind == "latent")


def _sequence_column(factor, model, dim) -> str | None:
    """The `by` column of `@sequences(by=seq)`: data with one value per row of the chain."""
    note = next((n for n in factor.annotations if n.rule == "sequences"), None)
    if note is None:
        return None
    by = dict(note.options).get("by")
    var = model.variables.get(by.id) if by is not None else None
    if var is None or var.kind != "data" or var.elem not in ("cat", "int") or tuple(var.shape) != (dim,):
        raise ModelError("E286", f"`@sequences` needs `by=` a `cat` or `int` data column with one value per "
                         f"element of `{factor.target.name}` ([{dim}])", span=note.span,
                         hint="declare `data seq: cat(S)[T]` and write `@sequences(by=seq)`")
    return by.id


def _is_number(indices, value) -> bool:
    return len(indices) == 1 and isinstance(indices[0], ast.Number) and indices[0].value == value


def _is_transition(factor, name: str, dim, model) -> bool:
    """`for t in 2..T { x[t] ~ Normal(mean, ...) }` with the mean linear in x through x[t-1] only."""
    if factor.dist.name != "Normal" or "mean" not in factor.args or not _loops_from_two(factor, dim):
        return False
    plate = factor.plates[0]
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
