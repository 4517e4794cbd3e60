"""A Gaussian block in the engine: where each member's elements sit in the stacked vector z,
the block's q as a family (natural parameter ↔ mean and covariance blocks, entropy), and the
rows c_p by which a factor reads z (η_p = c_pᵀ z + the rest of its linear form).

Members that belong to the group plate (one element per group: `a[g]`, `b[g]`) are the
arrow's groups; every other member is in the dense corner (ppl.infer.arrow). After every
update the block hands each member its marginal, so that reports, draws and the factors that
read one member at a time see q(a), q(mu) as before.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from ppl.diagnostics import ModelError
from ppl.families import Normal
from ppl.infer.arrow import ArrowLayout, entropy, solve
from ppl.infer.state import NumericalBreakdown

MAX_DENSE = 1000  # coordinates of the corner plus one group: a dense solve of that size per update


@dataclass(frozen=True)
class Placement:
    """Where member `name`'s elements (each `width` coordinates: 1 for a Normal, D for an
    MvNormal) sit: `local` (element g is group g, coordinates `base + k` of the group) or in the
    corner (element e at coordinates `base + e·width + k`)."""

    name: str
    local: bool
    base: int
    elements: int
    width: int = 1

    def coordinates(self, index: np.ndarray) -> np.ndarray:
        """(elements read, width): the coordinates of elements `index` (within their group if local)."""
        k = np.arange(self.width)
        return self.base + k[None, :] + (0 if self.local else self.width * np.asarray(index)[:, None])


def layout_for(block, model, env, scopes: dict):
    """(ArrowLayout, placements, group plate) of `block`, or None for a `--gaussian-block all`
    block whose dense part exceeds MAX_DENSE (mean field then; an explicit block is E380)."""
    plates = {m: model.variables[m].plates for m in block.members}
    local = [p[0] for m, p in plates.items() if len(p) == 1 and scopes.get(m, ("global",))[0] == "local"]
    group_plate = Counter(local).most_common(1)[0][0] if local else None
    placements, corner, width = {}, 0, 0
    for m in block.members:
        elements = int(np.prod([env.size(d) for d in plates[m]], dtype=np.int64))
        event = int(np.prod([env.size(d) for d in model.variables[m].event_shape], dtype=np.int64))
        if group_plate is not None and plates[m] == (group_plate,) and scopes.get(m, ("global",))[0] == "local":
            placements[m] = Placement(m, True, width, elements, event)
            width += event
        else:
            placements[m] = Placement(m, False, corner, elements, event)
            corner += elements * event
    groups = env.size(group_plate) if group_plate is not None else 0
    if corner + width > MAX_DENSE:
        if block.automatic:
            return None
        raise ModelError("E380", f"the Gaussian block {block.key} has {corner} coordinates outside the group plate "
                         f"and {width} per group: over the {MAX_DENSE} this version solves densely",
                         span=model.variables[block.members[0]].span,
                         hint="leave the largest non-group members out of the block")
    return ArrowLayout(corner, groups, width), placements, group_plate


def describe(block, layout_and_more, logs=()) -> str:
    """What `ppl check` says of a block's layout (`logs`: its Gamma members)."""
    if layout_and_more is None:
        return f"{block.reason}: too large for one block (over {MAX_DENSE} dense coordinates): mean field"
    layout, placements, plate = layout_and_more
    groups = f" + {layout.groups} groups ({plate}) × {layout.local}" if layout.groups else ""
    logs = (f"; {', '.join(logs)} through {'their logarithms' if len(logs) > 1 else 'its logarithm'} "
            "(q(τ) log-normal, Newton steps)") if logs else ""
    return (f"one Gaussian q of dimension {layout.dim} = {layout.corner} global{groups}; arrow-shaped precision, "
            f"solved in O(groups){logs} ({block.reason})")


def describe_blocks(model, dataset, analysis) -> list[tuple]:
    """(block, `describe` of it) for every block of `analysis` on `dataset`, as the run takes it."""
    from ppl.infer.block_build import runnable_members
    from ppl.infer.plates import Environment
    env = Environment(model, dataset)
    blocks = [runnable_members(b, model, analysis, dataset.masks) for b in analysis.gaussian]
    return [(b, describe(b, layout_for(b, model, env, analysis.scopes), b.logs(model)) if b.members else
             f"{b.reason}: no member the block can run here: mean field") for b in blocks]


def solution_sd(sol) -> np.ndarray:
    """The sd of every coordinate of a solved block, corner then groups."""
    return np.sqrt(np.concatenate([np.diagonal(sol.cov_cc), np.diagonal(sol.cov_ll, axis1=1, axis2=2).ravel()]))


class BlockFamily:
    """q(z) = N(J⁻¹h, J⁻¹) with an arrow-shaped J: the family of a block's one natural parameter."""

    name = "GaussianBlock"

    def __init__(self, key: str, layout: ArrowLayout, placements: dict, member_families: dict):
        self.key, self.layout, self.placements = key, layout, placements
        self.members = member_families  # member -> Normal family
        self.size = layout.size

    def neutral(self) -> np.ndarray:
        return self.layout.neutral()

    def valid(self, natural) -> np.ndarray:
        try:
            solve(self.layout, natural)
        except np.linalg.LinAlgError:
            return np.zeros(np.shape(natural)[:-1], dtype=bool)
        return np.all(np.isfinite(natural), axis=-1)

    def solve(self, natural):
        """(the ArrowSolution, entropy) — State caches both as the block's moments."""
        try:
            solution = solve(self.layout, natural)
        except np.linalg.LinAlgError as exc:
            raise NumericalBreakdown(next(iter(self.members)), f"the precision of the Gaussian block {self.key} "
                                     f"is not positive definite ({exc})") from None
        return solution, entropy(self.layout, solution)

    def mean(self, natural) -> np.ndarray:
        """E[z], corner then groups (the stopping rule's location)."""
        sol = solve(self.layout, natural)
        return np.concatenate([sol.mean_c, sol.mean_l.ravel()])

    def sd(self, natural) -> np.ndarray:
        return solution_sd(solve(self.layout, natural))

    def distribute(self, state) -> None:
        """Set every member's q to its marginal under the block (mean and covariance per element)."""
        sol = state.moments(self.key)
        for name, place in self.placements.items():
            if place.local:
                s = slice(place.base, place.base + place.width)
                mean, cov = sol.mean_l[:, s], sol.cov_ll[:, s, s]
            else:
                at = place.coordinates(np.arange(place.elements))
                mean, cov = sol.mean_c[at], sol.cov_cc[at[:, :, None], at[:, None, :]]
            family = self.members[name]
            if isinstance(family, Normal):  # a LogNormal member too: u = log τ's Normal
                state.set(name, family.natural(mean=mean[:, 0], precision=1.0 / cov[:, 0, 0]))
            else:
                try:
                    precision = np.linalg.inv(cov)
                except np.linalg.LinAlgError:  # variances under the smallest double (covariates near 1e300)
                    raise NumericalBreakdown(name, f"its covariance under the Gaussian block {self.key} is "
                                             "singular") from None
                state.set(name, family.natural(mean=mean, precision=precision))

    def place(self, name: str, index: np.ndarray, natural: np.ndarray) -> np.ndarray:
        """The per-element natural messages (P, D + D²) of MvNormal member `name` at elements
        `index` (P,), summed into the block's natural parameter."""
        layout, place = self.layout, self.placements[name]
        d, g, l, c = place.width, layout.groups, layout.local, layout.corner
        h, j = natural[:, :d], -2 * natural[:, d:].reshape(-1, d, d)
        at = place.coordinates(index)
        h_c, h_l, a = np.zeros(c), np.zeros((g, l)), np.zeros((c, c))
        blocks = np.zeros((g, l, l))
        if place.local:
            np.add.at(h_l, (index[:, None], at), h)
            np.add.at(blocks, (index[:, None, None], at[:, :, None], at[:, None, :]), j)
        else:
            np.add.at(h_c, at, h)
            np.add.at(a, (at[:, :, None], at[:, None, :]), j)
        return layout.pack(h_c, h_l, a, blocks, np.zeros((g, l, c)))[None, :]


class BlockRows:
    """The block part of a scalar linear form over a factor's P plate elements:
    η_p = Cg[p]·z_c + Cl[p]·z_{group[p]}, from (member, element index, coefficient) triples."""

    def __init__(self, family: BlockFamily, parts, elements: int, span=None):
        layout = family.layout
        self.layout = layout
        self.cg = np.zeros((elements, layout.corner))
        self.cl = np.zeros((elements, layout.local))
        group = np.full(elements, -1)
        rows = np.arange(elements)
        for name, index, coef in parts:  # coef: (elements, width) over the member's coordinates
            place = family.placements[name]
            at = place.coordinates(index)
            if place.local:
                clash = (group >= 0) & (group != index)
                if clash.any():
                    raise ModelError("E384", f"an element reads the group effects of two different groups "
                                     f"(`{name}`): the block's precision would not be arrow-shaped", span=span,
                                     hint="leave one of the two variables out of the block")
                group = np.where(np.any(coef != 0, axis=1), index, group)
                np.add.at(self.cl, (rows[:, None], at), coef)
            else:
                np.add.at(self.cg, (rows[:, None], at), coef)
        self.group = np.where(group >= 0, group, layout.groups)  # G: a row with no group effect
        # one 1 per element, in its group's row: built as CSR directly (half the time of COO's)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(self.group, minlength=layout.groups + 1))])
        self.by_group = sparse.csr_matrix((np.ones(elements), np.argsort(self.group, kind="stable"), indptr),
                                          shape=(layout.groups + 1, elements))

    def mean(self, sol) -> np.ndarray:
        """E[c_pᵀ z] per element."""
        local = np.vstack([sol.mean_l, np.zeros((1, self.layout.local))])[self.group]
        return self.cg @ sol.mean_c + np.sum(self.cl * local, axis=1)

    def variance(self, sol) -> np.ndarray:
        """Var[c_pᵀ z] = c_pᵀ Σ c_p per element, from the corner, its group and their cross block."""
        return self.covariance(self, sol)

    def covariance(self, other: "BlockRows", sol) -> np.ndarray:
        """Cov[c_pᵀ z, d_pᵀ z] per element, for rows `other` (d) of the same elements, each element
        reading one group (or none) in both."""
        l, c = self.layout.local, self.layout.corner
        group = np.where(self.group < self.layout.groups, self.group, other.group)
        cov_ll = np.concatenate([sol.cov_ll, np.zeros((1, l, l))])[group]
        cov_lc = np.concatenate([sol.cov_lc, np.zeros((1, l, c))])[group]
        cross = np.einsum("pi,pij,pj->p", self.cl, cov_lc, other.cg) + np.einsum("pi,pij,pj->p", other.cl, cov_lc,
                                                                                  self.cg)
        return (np.sum((self.cg @ sol.cov_cc) * other.cg, axis=1) + cross
                + np.einsum("pi,pij,pj->p", self.cl, cov_ll, other.cl))

    def cross(self, sol, at: int) -> np.ndarray:
        """Cov[c_pᵀ z, z_at] per element, for a corner coordinate `at` (a log precision's u)."""
        cov_lc = np.concatenate([sol.cov_lc[:, :, at], np.zeros((1, self.layout.local))])[self.group]
        return self.cg @ sol.cov_cc[:, at] + np.sum(self.cl * cov_lc, axis=1)

    def message(self, tau: np.ndarray, target: np.ndarray, corner: np.ndarray | None = None) -> np.ndarray:
        """The natural parameter of Π_p N(target_p | c_pᵀ z, 1/tau_p) in z: h = Σ τ t c,
        J = Σ τ c cᵀ, summed into the arrow's blocks (one sparse product per block kind);
        `corner` (P, c) replaces the rows' corner coefficients."""
        g, l, c = self.layout.groups, self.layout.local, self.layout.corner
        cg = self.cg if corner is None else corner
        wt = tau * target
        h_c = cg.T @ wt
        h_l = (self.by_group @ (self.cl * wt[:, None]))[:g]
        a = (cg.T * tau) @ cg
        d = (self.by_group @ (tau[:, None, None] * self.cl[:, :, None] * self.cl[:, None, :]).reshape(tau.size, l * l))
        b = (self.by_group @ (tau[:, None, None] * self.cl[:, :, None] * cg[:, None, :]).reshape(tau.size, l * c))
        return self.layout.pack(h_c, h_l, a, d[:g].reshape(g, l, l), b[:g].reshape(g, l, c))[None, :]
