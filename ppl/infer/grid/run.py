"""A grid over one hyperparameter h: q(h, rest) = Σ_j w_j u_j(h) q_j(rest) (docs/rules/grid.md).

1. An ordinary run of the whole model places the grid: nodes z_j (z = log h for a positive h)
   evenly spaced over ±`sds` sds of z under its q, `nodes` of them, cell width δ.
2. Each node fits q_j(rest) with h fixed at h_j (the model given h, ppl.infer.grid.spec),
   warm-started from its neighbour's q, walking out from the centre.
3. Its score is its cell's ELBO term, c_j = E_{u_j}[ELBO_j(z) + log p(z)] + log δ (ELBO_j(z): of
   the model given h = e^z, at q_j), the average over the cell by 3-point Gauss–Legendre;
   w ∝ e^c and the ELBO is log Σ_j e^{c_j}. A walk stops where the weight falls below
   `NEGLIGIBLE` of the largest, and goes on past ±sds (up to `REACH` × the span) while the edge
   still carries weight.

`progress` is called after every sweep of every run; a run stopped by it (Ctrl-C) ends the
grid with the nodes fitted so far, marked interrupted.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ppl.diagnostics import OptionError
from ppl.infer.grid.spec import GridSpec, conditional

NEGLIGIBLE = 1e-9  # a node whose weight is below this fraction of the largest is dropped, and ends its walk
EDGE = 1e-4  # past ±sds a walk goes on while its last node's weight is at least this fraction of the largest
REACH = 2.0  # and goes at most this many times `sds` from the centre
GAUSS = np.polynomial.legendre.leggauss(3)  # nodes in [−1, 1] (the middle one 0) and weights of a cell's average


def infer_grid(model, data, grid: GridSpec, spec, options, *, na=None, methods=None, gaussian_block=None,
               progress=None, stream=False, client=None, warm: bool = True):
    """The `GridPosterior` of `model` on `data` (what `Model.infer` returns with a grid); `warm`:
    start each node from its neighbour's q (False: from the usual start, benchmarks/grid.py)."""
    from ppl.graph import analyze
    from ppl.infer.fitting import fit
    from ppl.infer.grid.posterior import Node, grid_posterior, mixable
    from ppl.infer.plates import Environment
    if stream or client is not None or (spec is not None and spec.stochastic):
        what = "--stream" if stream else "a cluster" if client is not None else "a stochastic schedule"
        raise OptionError("E763", f"a grid over `{grid.name}` runs batch inference in memory, not {what}",
                          hint="drop --grid (or the model's @grid), or run without " + what)
    start = time.perf_counter()
    given = conditional(model.checked, grid)
    dataset = model.bind(data, na=na)
    first, first_run = fit(model.checked, dataset, model.analyze(dataset, methods, gaussian_block), spec, options,
                           progress)
    if first_run.interrupted:
        return first
    centre, scale = _placement(first[grid.name], given.log_scale)
    half = (grid.nodes - 1) // 2 or 1
    width = grid.sds * scale / half
    overrides = dict(model.checked.overrides)
    node_options = replace(options, restarts=1)
    block = _without(gaussian_block, grid.name)
    fits = {}

    def given_h(z: float):
        """(checked model, analysis, log p(z)) of the model given h at grid coordinate z."""
        checked = given.checked(overrides, np.exp(z) if given.log_scale else z)
        return checked, analyze(checked, dataset, methods, block), float(
            given.log_prior(Environment(checked, dataset), z))

    def at(k: int, previous):
        z = centre + k * width
        checked, analysis, log_prior = given_h(z)
        posterior, result = fit(checked, dataset, analysis, spec, node_options, progress,
                                initial=_carry(previous) if warm else None)
        # E over the cell of E_{q_k}[log p(y, rest, z)], by Gauss–Legendre in z; its midpoint is the fit's own
        values = [result.elbo + log_prior if x == 0 else _elbo_given(given_h(z + x * width / 2), dataset, spec,
                                                                     result.state)
                  for x in GAUSS[0]]
        score = float(np.dot(GAUSS[1] / 2, values)) + np.log(width)
        fits[k] = Node(z, score, posterior, result, float(result.elbo + log_prior + np.log(width)))
        return result.state

    state = at(0, first_run.state)
    mixable(fits[0].posterior, model.checked)
    for step in (1, -1):
        previous, k = state, step
        while abs(k) <= REACH * half and not any(f.run.interrupted for f in fits.values()):
            previous = at(k, previous)
            best = max(f.score for f in fits.values())
            if fits[k].score < best + np.log(NEGLIGIBLE) or (abs(k) >= half and fits[k].score < best + np.log(EDGE)):
                break
            k += step
    return grid_posterior(model, first, first_run, given, fits, width, NEGLIGIBLE, time.perf_counter() - start)


def _placement(marginal, log_scale: bool) -> tuple[float, float]:
    """Centre and sd of z (log h for a positive h) under the first run's q(h): its median and half
    the distance between its 15.9% and 84.1% quantiles (a Normal's sd; any family's)."""
    q = np.asarray(marginal.quantiles([0.5, 0.15865525393145707, 0.8413447460685429]), dtype=float).reshape(3)
    if log_scale:
        q = np.log(q)
    return float(q[0]), float(q[2] - q[1]) / 2


def _elbo_given(model_given, dataset, spec, state) -> float:
    """E_q[log p(y, rest | h)] + H(q) + log p(z) of the model given h at another point of a node's
    cell, at that node's q (no sweeps: q stays the node's)."""
    from ppl.infer import build_problem
    checked, analysis, log_prior = model_given
    problem = build_problem(checked, dataset, analysis, spec)
    with np.errstate(all="ignore"):
        return float(problem.elbo(_carry(state)(problem, np.random.default_rng(0)))) + log_prior


def _without(gaussian_block: str | None, name: str) -> str | None:
    """`--gaussian-block` for the model given h: h, a constant there, left out of a list of names."""
    if gaussian_block is None or gaussian_block.strip() in ("all", "none"):
        return gaussian_block
    kept = [n.strip() for n in gaussian_block.split(",") if n.strip() != name]
    return ",".join(kept) if kept else "none"


def _carry(previous):
    """`initial(problem, rng)` that takes the usual start, then `previous`'s λ wherever its variable is
    there too (a node's warm start from its neighbour, and a node's q at another point of its cell)."""
    from ppl.infer.initialise import initialise

    def initial(problem, rng):
        state = initialise(problem, rng)
        for name, value in dict.items(previous.natural):
            if name in state.natural and np.shape(dict.__getitem__(state.natural, name)) == np.shape(value):
                state.set(name, value)
        return state
    return initial
