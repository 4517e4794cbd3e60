"""Which latent variables share one joint Gaussian q: the model's `block` statements, or every
Gaussian (Normal, MvNormal) latent with `--gaussian-block all` (`Model.infer(gaussian_block="all")`).

The analyzer only names the members; the engine lays them out (globals in a dense corner, the
group effects of one group plate as the arrow's groups, ppl.infer.arrow) and refuses a block
whose dense part is too large (E380) or that a factor reads in a way it cannot run (E381).
"""

from __future__ import annotations

from dataclasses import dataclass

from ppl.diagnostics import ModelError, OptionError, nearest

SWITCH_VALUES = ("all", "none")
GAUSSIAN = ("Normal", "MvNormal")


@dataclass(frozen=True)
class GaussianBlock:
    """Normal and MvNormal latent variables with one joint Gaussian q."""

    members: tuple[str, ...]
    reason: str
    automatic: bool = False  # from `--gaussian-block all`: mean field instead when it is too large

    @property
    def key(self) -> str:
        """The name of the block's q in the engine's state."""
        return "[" + ", ".join(self.members) + "]"


def gaussian_blocks(model, switch: str | None, groups=(), chains=()) -> tuple[GaussianBlock, ...]:
    """The blocks of `model`: its `block` statements, replaced by `switch` when given: "all"
    (every Normal and MvNormal latent outside a `@joint` group or a chain), "none" (mean field), or a
    comma-separated list of members (one block)."""
    taken = {g.mean for g in groups} | {g.precision for g in groups} | {c.variable for c in chains}
    if switch is None:
        blocks = [GaussianBlock(m, "`block` statement") for m in model.blocks]
    elif switch.strip() == "none":
        blocks = []
    elif switch.strip() == "all":
        members = tuple(n for n, v in model.variables.items()
                        if v.kind == "latent" and v.dist in GAUSSIAN and n not in taken)
        blocks = [GaussianBlock(members, "--gaussian-block all", automatic=True)] if members else []
    else:
        blocks = [GaussianBlock(_listed(model, switch), "--gaussian-block")]
    for block in blocks:
        for name in block.members:
            if name in taken:
                raise ModelError("E279", f"`{name}` cannot be in a Gaussian block: its q is structured already "
                                 "(a `@joint` group or a Markov chain)", span=model.variables[name].span,
                                 hint=f"leave `{name}` out of the block")
    return tuple(blocks)


def _listed(model, switch: str) -> tuple[str, ...]:
    """The members named by `--gaussian-block mu,a,b` (E383 for a name that is not a Normal latent)."""
    names = tuple(n.strip() for n in switch.split(",") if n.strip())
    latent = [n for n, v in model.variables.items() if v.kind == "latent" and v.dist in GAUSSIAN]
    for name in names:
        if name not in latent:
            guess = nearest(name, latent)
            raise OptionError("E383", f"--gaussian-block {switch}: `{name}` is not a Normal or MvNormal latent variable",
                              hint=f"give {', '.join(repr(v) for v in SWITCH_VALUES)} or names among "
                                   f"{', '.join(latent) or '(none)'}" + (f"; did you mean `{guess}`?" if guess else ""))
    if not names or len(set(names)) != len(names):
        raise OptionError("E383", f"--gaussian-block {switch}: name each member once",
                          hint="e.g. --gaussian-block all, or --gaussian-block mu_a,a")
    return names
