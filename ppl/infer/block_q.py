"""A Gaussian block's q in the posterior: the joint N(J⁻¹h, J⁻¹) over its members, kept whole
so that draws, predictions and scores see the members' correlations, not only their marginals.

Draws go corner first, then each group given the corner: z_c ~ N(μ_c, Σ_cc), and
z_g | z_c ~ N(μ_g − D_g⁻¹B_g (z_c − μ_c), D_g⁻¹) (the arrow's conditional: ppl.infer.arrow),
O(n (c² + G l²)) after one O(c³ + G l³) factorisation. A member held through its logarithm
(u = log τ, q(τ) log-normal) is drawn as exp(u).
"""

from __future__ import annotations

import numpy as np

from ppl.infer.arrow import ArrowLayout, solve
from ppl.infer.block import Placement


class BlockQ:
    """The block `key` over its members: the layout, where each member's elements sit, and each
    member's shape (plates, then an MvNormal's event axis)."""

    def __init__(self, key: str, layout: ArrowLayout, placements: dict, natural: np.ndarray, shapes: dict,
                 logs=()):
        self.key, self.layout, self.placements = key, layout, placements
        self.natural = np.asarray(natural, dtype=float).reshape(-1)
        self.shapes = {name: tuple(shape) for name, shape in shapes.items()}
        self.logs = tuple(logs)

    @classmethod
    def of(cls, family, natural, shapes: dict, logs=()) -> "BlockQ":
        """From the engine's BlockFamily and its natural parameter; `shapes`: the members' plates."""
        return cls(family.key, family.layout, dict(family.placements), natural,
                   {m: tuple(shapes[m]) + tuple(getattr(f, "event_shape", ())) for m, f in family.members.items()},
                   logs)

    @property
    def members(self) -> tuple:
        return tuple(self.placements)

    def solution(self):
        """Mean and covariance blocks (ppl.infer.arrow.ArrowSolution)."""
        return solve(self.layout, self.natural)

    def draws(self, n: int, rng) -> dict:
        """`n` joint draws of every member, by name: (n,) + the member's shape (+ its event)."""
        layout = self.layout
        c, g, l = layout.corner, layout.groups, layout.local
        _, _, _, d, b = layout.unpack(self.natural)
        sol = self.solution()
        eps_c = rng.standard_normal((n, c))
        offset = eps_c @ np.linalg.cholesky(sol.cov_cc).T if c else eps_c  # z_c − μ_c
        z_c = sol.mean_c + offset
        z_l = np.empty((n, g, l))
        if g and l:
            chol_d = np.linalg.cholesky(d)  # (G, l, l); D_g⁻¹ = L⁻ᵀ L⁻¹
            shift = -np.linalg.solve(d, b) @ offset.T  # (G, l, n): −D_g⁻¹ B_g (z_c − μ_c)
            eps = rng.standard_normal((g, l, n))
            noise = np.linalg.solve(np.swapaxes(chol_d, 1, 2), eps)  # L⁻ᵀ ε ~ N(0, D_g⁻¹)
            z_l = np.moveaxis(sol.mean_l[:, :, None] + shift + noise, 2, 0)
        return {name: self._member(name, z_c, z_l) for name in self.placements}

    def _member(self, name: str, z_c: np.ndarray, z_l: np.ndarray) -> np.ndarray:
        place, n = self.placements[name], z_c.shape[0]
        if place.local:
            values = z_l[:, :, place.base:place.base + place.width]
        else:
            values = z_c[:, place.coordinates(np.arange(place.elements))]
        values = values.reshape((n,) + self.shapes[name])
        return np.exp(values) if name in self.logs else values

    def document(self) -> dict:
        """What a saved posterior holds of the block (ppl.infer.saved)."""
        return {"key": self.key, "layout": [self.layout.corner, self.layout.groups, self.layout.local],
                "placements": [[p.name, p.local, p.base, p.elements, p.width] for p in self.placements.values()],
                "shapes": {name: list(shape) for name, shape in self.shapes.items()},
                "logs": list(self.logs), "natural": self.natural.tolist()}

    @classmethod
    def from_document(cls, doc: dict) -> "BlockQ":
        layout = ArrowLayout(*(int(v) for v in doc["layout"]))
        placements = {p[0]: Placement(str(p[0]), bool(p[1]), int(p[2]), int(p[3]), int(p[4])) for p in doc["placements"]}
        natural = np.asarray(doc["natural"], dtype=float)
        if natural.shape != (layout.size,) or set(doc["shapes"]) != set(placements):
            raise ValueError(f"the block {doc['key']} has {natural.size} natural parameters for a layout of "
                             f"{layout.size}, or shapes for other members")
        return cls(str(doc["key"]), layout, placements, natural, doc["shapes"], doc["logs"])
