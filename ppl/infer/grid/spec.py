"""Which hyperparameter a grid runs over, and the model given it.

A grid is asked for by `@grid` on the hyperparameter's own statement (`tau ~ Gamma(1, 1)
@grid(nodes=21, sds=4)`) or by `grid="tau(nodes=21)"` / `--grid` (which override the file;
`none` turns it off). Given h, the rest of the model is the same model with h a constant: its
statement becomes `const h = ...` (set per node as `--set` would), and its prior density, whose
parameters must be constants, is added to each node's ELBO here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from ppl.diagnostics import ModelError, OptionError, Span
from ppl.lang import ast

NODES, SDS = 21, 4.0  # defaults: 21 nodes over ±4 sds of h (log h) under the first run's q
FAMILIES = {"Gamma": True, "Normal": False}  # the prior of h -> whether its grid is in log h
_SPEC = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:\((.*)\))?\s*$")


@dataclass(frozen=True)
class GridSpec:
    """A grid over scalar latent `name`: `nodes` nodes spanning ±`sds` posterior sds of h (of
    log h for a positive h) under a first ordinary run; `span`: the `@grid` asking for it."""

    name: str
    nodes: int = NODES
    sds: float = SDS
    span: Span | None = None


def requested(checked, option: str | None) -> GridSpec | None:
    """The grid of a run: `option` (``grid=`` / ``--grid``) if given, else the model's `@grid`."""
    if option is not None:
        return parse_option(option)
    notes = [(f, a) for f in checked.factors for a in f.annotations if a.rule == "grid"]
    if not notes:
        return None
    if len(notes) > 1:
        raise ModelError("E760", "a model takes one `@grid`: q is a mixture over one hyperparameter's grid",
                         span=notes[1][1].span)
    factor, note = notes[0]
    values = {k: (v.value if isinstance(v, ast.Number) else v.id) for k, v in note.options}
    return _valid(GridSpec(factor.target.name, span=note.span), values, note.span)


def parse_option(text: str) -> GridSpec | None:
    """``"tau"``, ``"tau(nodes=21, sds=4)"`` or ``"none"`` (no grid, whatever the file says)."""
    match = _SPEC.match(str(text))
    if text is None or match is None:
        raise OptionError("E764", f"--grid {text!r}: expected NAME or NAME(nodes=21, sds=4)",
                          hint="e.g. --grid 'tau_b(nodes=21)'")
    if match.group(1) == "none" and match.group(2) is None:
        return None
    values = {}
    for part in filter(None, (p.strip() for p in (match.group(2) or "").split(","))):
        key, _, value = part.partition("=")
        try:
            values[key.strip()] = float(value)
        except ValueError:
            raise OptionError("E764", f"--grid {text}: `{part}` is not NAME=NUMBER") from None
    return _valid(GridSpec(match.group(1)), values, None)


def _valid(spec: GridSpec, values: dict, span) -> GridSpec:
    """`spec` with its options, checked: nodes an odd or even integer in 3..201, sds > 0."""
    error = ModelError if span is not None else OptionError
    unknown = set(values) - {"nodes", "sds"}
    if unknown:
        raise error("E764", f"`@grid` has no option `{sorted(unknown)[0]}`", span=span, expected="nodes, sds")
    nodes, sds = values.get("nodes", NODES), values.get("sds", SDS)
    if not (float(nodes) == int(nodes) and 3 <= nodes <= 201):
        raise error("E764", f"grid nodes must be an integer from 3 to 201, got {nodes:g}", span=span)
    if not (0 < sds <= 20):
        raise error("E764", f"grid sds must be in (0, 20], got {sds:g}", span=span)
    return replace(spec, nodes=int(nodes), sds=float(sds))


@dataclass(frozen=True)
class Conditional:
    """The model with h a constant (`program`, checked per node with h set) and h's prior."""

    program: ast.Program
    name: str
    log_scale: bool  # the grid is in log h (a positive h)
    prior: tuple  # (distribution name, {role: expression}) of h's own statement

    def checked(self, overrides: dict, value: float):
        """The model checked with h = `value` (and the run's other constants)."""
        from ppl.lang import check
        return check(self.program, {**overrides, self.name: float(value)})

    def log_prior(self, environment, z: np.ndarray) -> np.ndarray:
        """log density of the grid coordinate z (log h for a positive h: with the Jacobian h)."""
        from ppl import families as fam
        from ppl.infer.factors.gaussian import to_precision
        dist, args = self.prior
        value = {role: float(environment.evaluate(expr, {})) for role, expr in args.items()}
        if dist == "Gamma":
            return fam.Gamma().log_density(np.exp(z), fam.Gamma().natural(**value)) + z
        role = next(r for r in ("precision", "sd", "var") if r in value)
        return fam.Normal().log_density(z, fam.Normal().natural(mean=value["mean"],
                                                                precision=to_precision(value[role], role)))


def describe_grid(checked, option: str | None) -> dict | None:
    """What `ppl check` says of the run's grid (checked as a run would: E760–E764), or None."""
    spec = requested(checked, option)
    if spec is None:
        return None
    given = conditional(checked, spec)
    coordinate = f"log {spec.name}" if given.log_scale else spec.name
    return {"variable": spec.name, "nodes": spec.nodes, "sds": spec.sds, "scale": "log" if given.log_scale else
            "linear", "description": f"q a mixture over {spec.nodes} nodes in {coordinate} spanning ±{spec.sds:g} sds "
            f"of a first run's q, one fit of the rest per node ({'--grid' if spec.span is None else '@grid'})"}


def conditional(checked, spec: GridSpec) -> Conditional:
    """The model given h, after checking that h is a scalar latent drawn by one top-level
    statement from a Gamma or Normal with constant parameters (E760–E762)."""
    from ppl.diagnostics import nearest
    variable = checked.variables.get(spec.name)
    if variable is None or variable.kind != "latent":
        latent = [n for n, v in checked.variables.items() if v.kind == "latent"]
        guess = nearest(spec.name, latent)
        what = "not a variable of the model" if variable is None else f"{variable.kind}, not a latent variable"
        raise _error(spec, "E760", f"a grid runs over a latent variable: `{spec.name}` is {what}",
                     hint=f"latent variables: {', '.join(latent)}" + (f"; did you mean `{guess}`?" if guess else ""))
    factor = checked.factors_of(spec.name)[0]
    if variable.shape != () or factor.plates:
        raise ModelError("E761", f"a grid runs over one scalar: `{spec.name}` has shape "
                         f"[{', '.join(map(str, variable.shape))}]", span=factor.span,
                         hint="put a grid on a scalar hyperparameter (a precision, a scale)")
    if factor.dist.name not in FAMILIES:
        raise ModelError("E761", f"a grid runs over a Gamma or Normal variable; `{spec.name}` is "
                         f"{factor.dist.name}", span=factor.span)
    for expr in factor.args.values():
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and checked.variables.get(node.id) is not None \
                    and checked.variables[node.id].kind != "const":
                raise ModelError("E762", f"the prior of grid variable `{spec.name}` reads `{node.id}`: its "
                                 "parameters must be constants", span=node.span,
                                 hint="the grid weighs each node by this prior's density at it")
    items = []
    for item in checked.program.items:
        if isinstance(item, ast.Sample) and item.target.name == spec.name:
            item = ast.ConstDecl(spec.name, None, ast.Number(1.0, False, item.span), item.span, item.target.name_span)
        elif isinstance(item, ast.GaussianBlock) and spec.name in item.names:
            kept = [(n, s) for n, s in zip(item.names, item.name_spans) if n != spec.name]
            if not kept:
                continue
            item = ast.GaussianBlock(tuple(n for n, _ in kept), tuple(s for _, s in kept), item.span)
        items.append(item)
    program = ast.Program(tuple(items), checked.program.source)
    return Conditional(program, spec.name, FAMILIES[factor.dist.name], (factor.dist.name, dict(factor.args)))


def _error(spec: GridSpec, code: str, message: str, hint: str):
    if spec.span is None:
        return OptionError(code, f"--grid: {message}", hint=hint)
    return ModelError(code, message, span=spec.span, hint=hint)
