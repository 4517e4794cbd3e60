"""The options of a GLM factor's annotation (`@cvi(step=, kappa=, minibatch=)`, `@piecewise(pieces=,
kind=)`), read into what the factor runs: a step schedule, a minibatch size, a piecewise bound."""

from __future__ import annotations

from ppl.infer import likelihoods
from ppl.infer.access import Unsupported
from ppl.lang.schedule import CVI_KAPPA, CVI_STEP

PIECEWISE_KIND, PIECEWISE_PIECES = "quadratic", 10  # error at most 0.0013 nats per data point


def cvi_step(options) -> tuple[float, float]:
    """(β, κ) of a `@cvi` annotation's step ρ_t = β·t^−κ (Robbins–Monro: κ ∈ (½, 1])."""
    return float(options.get("step", CVI_STEP)), float(options.get("kappa", CVI_KAPPA))


def step_size(step: tuple, t: int) -> float:
    """ρ_t = β·t^−κ for step = (β, κ): the engine's damping of a node, or a factor's of its sites."""
    beta, kappa = step
    return beta * t ** -kappa


def minibatch(options, factor, plate_shape):
    """The `minibatch` option: rows of the first plate axis per step (None: the whole plate)."""
    if "minibatch" not in options:
        return None
    batch, total = options["minibatch"], plate_shape[0] if plate_shape else 1
    if not (isinstance(batch, int) and 2 <= batch <= total):
        raise Unsupported(f"`@cvi(minibatch={batch})` on `{factor.name}`: a whole number of rows from 2 to "
                          f"the plate's {total}", factor.span)
    return None if batch == total else batch


def piecewise_rule(options, factor):
    """The rule of the shipped piecewise bound named by `@piecewise(pieces=R, kind=linear|quadratic)`."""
    return likelihoods.piecewise(piecewise_table(options, factor, "piecewise"))


def piecewise_table(options, factor, annotation: str):
    """The shipped bound on llp named by `@annotation(pieces=R, kind=...)` (default quadratic, R = 10),
    or a located E500 naming the choices."""
    from ppl.infer.piecewise import table
    kind, pieces = str(options.get("kind", PIECEWISE_KIND)), options.get("pieces", PIECEWISE_PIECES)
    try:
        if not isinstance(pieces, int):
            raise ValueError(f"pieces must be a whole number, not {pieces}")
        return table(kind, pieces)
    except ValueError as exc:
        raise Unsupported(f"`@{annotation}` on `{factor.name}`: {exc}", factor.span) from None
