"""The posterior of a grid run: mixtures over the nodes' posteriors, drawn jointly.

A `GridPosterior` is a `Posterior` whose marginals are the grid's (ppl.infer.grid.mixture) and
whose draws pick a node by its weight, h in that node's cell and the rest from that node's q,
so that draws keep the dependence of the rest on h. Its `parts` are the nodes' posteriors with
their weights: `predict` and `score` mix the parts' predictives, each part folded in with the
model given its h (`part_models`). It saves with every node's q (ppl.infer.grid.saved).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ppl.diagnostics import ModelError
from ppl.infer import selection
from ppl.infer.grid.mixture import CellMarginal, mixture, mixture_elbo
from ppl.infer.posterior import Posterior, check_draws, draws_rng, origin


class Node(NamedTuple):
    """One node's fit: its coordinate z, its cell's score c (the cell's ELBO term: E over the
    cell of the node's ELBO given h, plus log p(z) and log δ), its posterior and run, and the
    score at the cell's midpoint alone."""

    z: float
    score: float
    posterior: Posterior
    run: object
    midpoint: float


@dataclass(repr=False)
class GridPosterior(Posterior):
    """A `Posterior` of a grid over `grid["variable"]`; `nodes`: the kept nodes' posteriors."""

    grid: dict = field(default_factory=dict)
    nodes: list = field(default_factory=list, compare=False)

    def draws(self, n: int, seed=None, vars=None) -> dict:  # noqa: A002
        names = list(self.marginals) if vars is None else selection.chosen(self, vars)
        check_draws(n)
        h = self.grid["variable"]
        rng = draws_rng(seed)
        cell = self.marginals[h]
        node = rng.choice(len(self.nodes), size=n, p=cell.weights)
        out = {h: cell.at(node, rng)} if h in names else {}
        rest = [name for name in names if name != h]
        for j in np.unique(node) if rest else ():
            at = np.flatnonzero(node == j)
            for name, values in self.nodes[j].draws(len(at), rng, rest).items():
                if name not in out:
                    out[name] = np.empty((n,) + values.shape[1:], dtype=values.dtype)
                out[name][at] = values
        return {name: out[name] for name in names}

    @property
    def parts(self) -> list:
        """(weight, posterior) of every node: q is Σ_j w_j u_j(h) q_j(rest)."""
        return list(zip(self.marginals[self.grid["variable"]].weights.tolist(), self.nodes))

    def part_models(self, model) -> list:
        """The model given h = h_j (h a constant, as each node was fitted), per part."""
        from ppl.infer.grid.spec import GridSpec, conditional
        given = conditional(model.checked, GridSpec(self.grid["variable"]))
        overrides = dict(model.checked.overrides)
        return [model.with_checked(given.checked(overrides, value)) for value in self.grid["nodes"]]

    def to_json(self) -> dict:
        return {**super().to_json(), "grid": self.grid}


def mixable(posterior, checked) -> None:
    """Refuse (E763, at the variable) a node posterior whose marginals a mixture cannot summarise
    exactly (a Student-t of a `@joint` group, a Wishart, an imputed count)."""
    for name, marginal in posterior.marginals.items():
        if mixture([marginal], np.ones(1)) is None:
            raise ModelError("E763", f"a grid mixes the nodes' q of `{name}` ({marginal.name}), whose mixture "
                             "has no exact quantiles here", span=checked.variables[name].span,
                             hint="grids run over models whose other marginals are Normal, Gamma, Beta, "
                                  "Dirichlet, log-normal or Categorical")


def mixed_marginals(order: list, h: str, cell: CellMarginal, nodes: list) -> dict:
    """The marginals in `order`: h's cells, and the mixture of the nodes' q of every other variable."""
    marginals = {}
    for name in order:
        if name == h:
            marginals[name] = cell
        elif name in nodes[0].marginals:
            marginals[name] = mixture([p.marginals[name] for p in nodes], cell.weights)
    return marginals


def grid_posterior(model, first, first_run, given, fits: dict, width: float, negligible: float,
                   seconds: float) -> GridPosterior:
    """The posterior of the nodes `fits` ({k: Node}) kept by weight."""
    h = given.name
    order = sorted(fits)
    best = max(fits[k].score for k in order)
    kept = [fits[k] for k in order if fits[k].score >= best + np.log(negligible)]
    elbo, weights = mixture_elbo([f.score for f in kept])
    nodes = [f.posterior for f in kept]
    centres = np.array([f.z for f in kept])
    cell = CellMarginal(centres, width, weights, given.log_scale)
    mode = nodes[int(np.argmax(weights))]
    marginals = mixed_marginals(list(model.checked.variables), h, cell, nodes)
    runs = [f.run for f in kept]
    values = np.exp(centres) if given.log_scale else centres
    coordinate = f"log {h}" if given.log_scale else h
    note = (f"grid over `{h}`: {len(kept)} nodes from {values.min():.4g} to {values.max():.4g}, cells "
            f"{width:.3g} wide in {coordinate}; ELBO of the ordinary q {first.elbo:.6f}, of the best single "
            f"cell {max(f.score for f in kept):.6f}")
    grid = {"variable": h, "scale": "log" if given.log_scale else "linear", "nodes": values.tolist(),
            "width": width, "weights": weights.tolist(), "node_elbo": [r.elbo for r in runs],
            "scores": [f.score for f in kept], "midpoint_scores": [f.midpoint for f in kept],
            "dropped": len(order) - len(kept),
            "ordinary_elbo": first.elbo}
    return GridPosterior(
        marginals, elbo, list(first.trace), {}, first.iterations + sum(fits[k].run.iterations for k in order),
        first.converged and all(r.converged for r in runs), seconds, tags=mode.tags, levels=mode.levels,
        notes=[*mode.notes, note], trace_se=list(first.trace_se), scopes={**mode.scopes, h: "global"},
        components=mode.components, dims={**mode.dims, h: ()}, coords=mode.coords,
        origin=origin(model.checked, mode.dataset), observed=mode.observed, dataset=mode.dataset,
        interrupted=any(f.run.interrupted for f in fits.values()), grid=grid, nodes=nodes)
