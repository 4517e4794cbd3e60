"""Which latent variables share one joint Gaussian q: the model's `block` statements, or every
Gaussian (Normal, MvNormal) latent with `--gaussian-block all` (`Model.infer(gaussian_block="all")`).

A Gamma precision joins through its logarithm u = log τ (q(τ) log-normal, ppl.infer.factors.
block_log) when it is one scalar with constant prior parameters, read only as the precision of
Normal statements whose value and mean read block members and data (E630–E633; `--gaussian-block
all` takes every Gamma that qualifies and leaves the others in mean field).

The analyzer only names the members; the engine lays them out (globals in a dense corner, the
group effects of one group plate as the arrow's groups, ppl.infer.arrow) and refuses a block
whose dense part is too large (E380) or that a factor reads in a way it cannot run (E381).
"""

from __future__ import annotations

from dataclasses import dataclass

from ppl.diagnostics import ModelError, OptionError, nearest
from ppl.graph import forms
from ppl.lang import ast

SWITCH_VALUES = ("all", "none")
GAUSSIAN = ("Normal", "MvNormal")
LOG = "Gamma"  # joins through its logarithm


@dataclass(frozen=True)
class GaussianBlock:
    """Normal and MvNormal latent variables with one joint Gaussian q."""

    members: tuple[str, ...]
    reason: str
    automatic: bool = False  # from `--gaussian-block all`: mean field instead when it is too large

    def logs(self, model) -> tuple[str, ...]:
        """The Gamma members (in the block as u = log τ)."""
        return tuple(m for m in self.members if model.variables[m].dist == LOG)

    @property
    def key(self) -> str:
        """The name of the block's q in the engine's state."""
        return "[" + ", ".join(self.members) + "]"


def gaussian_blocks(model, switch: str | None, groups=(), chains=()) -> tuple[GaussianBlock, ...]:
    """The blocks of `model`: its `block` statements, replaced by `switch` when given: "all"
    (every Normal and MvNormal latent outside a `@joint` group or a chain), "none" (mean field), or a
    comma-separated list of members (one block)."""
    taken = {g.mean for g in groups} | {g.precision for g in groups} | {c.variable for c in chains}
    if switch is not None and not isinstance(switch, str):
        raise OptionError("E383", f"--gaussian-block {switch!r}: the value is text, not {type(switch).__name__}",
                          hint=f"give {', '.join(repr(v) for v in SWITCH_VALUES)} or member names separated by "
                               "commas, e.g. 'mu_a,a'")
    if switch is None:
        blocks = [GaussianBlock(m, "`block` statement") for m in model.blocks]
    elif switch.strip() == "none":
        blocks = []
    elif switch.strip() == "all":
        members = tuple(n for n, v in model.variables.items()
                        if v.kind == "latent" and v.dist in GAUSSIAN and n not in taken)
        members += tuple(n for n, v in model.variables.items() if v.kind == "latent" and v.dist == LOG
                         and n not in taken and members and log_member_error(model, n, members) is None)
        blocks = [GaussianBlock(members, "--gaussian-block all", automatic=True)] if members else []
    else:
        blocks = [GaussianBlock(_listed(model, switch), "--gaussian-block")]
    for block in blocks:
        for name in block.members:
            if name in taken:
                raise ModelError("E279", f"`{name}` cannot be in a Gaussian block: its q is structured already "
                                 "(a `@joint` group or a Markov chain)", span=model.variables[name].span,
                                 hint=f"leave `{name}` out of the block")
            checked = block.automatic  # `all` admitted its Gamma members by this check already
            error = (log_member_error(model, name, block.members)
                     if model.variables[name].dist == LOG and not checked else None)
            if error is not None:
                raise error
    return tuple(blocks)


def log_member_error(model, name: str, members) -> ModelError | None:
    """Why Gamma `name` cannot join a block of `members` through its logarithm (E630–E633), or None."""
    var = model.variables[name]
    hint = f"leave `{name}` out of the block: it keeps its Gamma q"
    if var.plates or var.event_shape:
        return ModelError("E630", f"`{name}` is a Gamma array; a block takes one scalar Gamma precision "
                          "through its logarithm", span=var.span, hint=hint)
    for factor in model.factors:
        args = {role: forms.inline(e, model.definitions) for role, e in factor.args.items()}
        latent = {n.id for e in args.values() for n in ast.walk(e) if isinstance(n, ast.Name)
                  and n.id in model.variables and model.variables[n.id].kind == "latent"}
        if factor.target.name == name:
            if latent:
                return ModelError("E632", f"the Gamma prior of block member `{name}` reads latent "
                                  f"`{sorted(latent)[0]}`; a block takes a Gamma with constant shape and rate",
                                  span=factor.span, hint=hint)
            continue
        if name not in latent:
            continue
        precision = args.get("precision")
        if factor.dist.name != "Normal" or precision is None or not _scaled_read(precision, name, model) or \
                any(forms.reads(e, name) for role, e in args.items() if role != "precision"):
            return ModelError("E631", f"`{factor.name}` reads block member `{name}` other than as the precision "
                              f"of a Normal statement (`Normal(m, {name})` or data times it)", span=factor.span,
                              hint=hint)
        outside = sorted((latent - {name}) - set(members))
        target = model.variables[factor.target.name]
        if target.kind == "latent" and factor.target.name not in members:
            outside = [factor.target.name] + outside
        if outside:
            return ModelError("E633", f"`{factor.name}` has block member `{name}` as its precision and reads "
                              f"`{outside[0]}`, which is outside the block", span=factor.span,
                              hint=f"put `{outside[0]}` in the block too, or leave `{name}` out of it")
    return None


def _scaled_read(expr, name: str, model) -> bool:
    """`name`, or data times `name` (the precisions a Normal statement's log-normal term runs)."""
    if isinstance(expr, ast.Name):
        return expr.id == name
    if isinstance(expr, ast.BinOp) and expr.op == "*":
        for this, other in ((expr.left, expr.right), (expr.right, expr.left)):
            if _scaled_read(this, name, model) and not any(
                    isinstance(n, ast.Name) and n.id in model.variables and model.variables[n.id].kind == "latent"
                    for n in ast.walk(other)):
                return True
    return False


def _listed(model, switch: str) -> tuple[str, ...]:
    """The members named by `--gaussian-block mu,a,b` (E383 for a name that is not a Normal,
    MvNormal or Gamma latent)."""
    names = tuple(n.strip() for n in switch.split(",") if n.strip())
    latent = [n for n, v in model.variables.items() if v.kind == "latent" and v.dist in GAUSSIAN + (LOG,)]
    for name in names:
        if name not in latent:
            guess = nearest(name, latent)
            raise OptionError("E383", f"--gaussian-block {switch}: `{name}` is not a Normal, MvNormal or Gamma latent variable",
                              hint=f"give {', '.join(repr(v) for v in SWITCH_VALUES)} or names among "
                                   f"{', '.join(latent) or '(none)'}" + (f"; did you mean `{guess}`?" if guess else ""))
    if not names or len(set(names)) != len(names):
        raise OptionError("E383", f"--gaussian-block {switch}: name each member once",
                          hint="e.g. --gaussian-block all, or --gaussian-block mu_a,a")
    return names
