"""Gaussians with an arrow-shaped precision, solved in O(G) by eliminating the groups.

A Gaussian block (`block (mu, a, b)`, `--gaussian-block all`) stacks its coordinates as the
globals z_c (the dense corner, dimension c) then G groups of local coordinates z_g (dimension
l each). Group effects conditionally independent given the globals make the precision

        J = [[A,  B_1ᵀ ... B_Gᵀ],          A: c × c,  D_g: l × l,  B_g: l × c
             [B_1, D_1         ],
             [ ...       ...   ],
             [B_G,          D_G]]

and block elimination gives everything from G small solves and one c × c Schur complement
S = A − Σ_g B_gᵀ D_g⁻¹ B_g:

    Σ_cc = S⁻¹,   Σ_gc = −D_g⁻¹ B_g Σ_cc,   Σ_gg = D_g⁻¹ + D_g⁻¹ B_g Σ_cc B_gᵀ D_g⁻¹,
    μ_c = S⁻¹ (h_c − Σ_g B_gᵀ D_g⁻¹ h_g),   μ_g = D_g⁻¹ (h_g − B_g μ_c),
    log |J| = log |S| + Σ_g log |D_g|,

O(G (l³ + l²c + l c²) + c³) instead of O((c + G l)³). The cross-group covariances Σ_gg'
(g ≠ g') are never formed: no factor of a block reads two groups at once.

Natural parameters are one flat vector (h_c, h_g, −½A, −½D_g, −½B_g), so that messages add
and a damped step is the one update equation of ppl.infer.update.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ArrowLayout:
    corner: int  # c: the global coordinates
    groups: int  # G
    local: int  # l: coordinates per group

    @property
    def size(self) -> int:
        c, g, l = self.corner, self.groups, self.local
        return c + g * l + c * c + g * l * l + g * l * c

    @property
    def dim(self) -> int:
        return self.corner + self.groups * self.local

    def pack(self, h_c, h_l, a, d, b) -> np.ndarray:
        """(h_c, h_g, A, D_g, B_g) → the flat natural parameter (precisions stored as −½ J)."""
        return np.concatenate([np.ravel(h_c), np.ravel(h_l), -0.5 * np.ravel(a), -0.5 * np.ravel(d),
                               -0.5 * np.ravel(b)])

    def unpack(self, eta: np.ndarray):
        """The flat natural parameter → (h_c (c,), h_g (G, l), A (c, c), D (G, l, l), B (G, l, c))."""
        c, g, l = self.corner, self.groups, self.local
        eta = np.ravel(eta)
        cuts = np.cumsum([c, g * l, c * c, g * l * l])
        h_c, h_l, a, d, b = np.split(eta, cuts)
        return (h_c, h_l.reshape(g, l), -2 * a.reshape(c, c), -2 * d.reshape(g, l, l), -2 * b.reshape(g, l, c))

    def neutral(self) -> np.ndarray:
        """Mean 0, precision I: where a run starts."""
        c, g, l = self.corner, self.groups, self.local
        return self.pack(np.zeros(c), np.zeros((g, l)), np.eye(c), np.broadcast_to(np.eye(l), (g, l, l)),
                         np.zeros((g, l, c)))

    def dense(self, eta: np.ndarray):
        """(h, J) as one vector and one dense matrix (for tests and small checks)."""
        h_c, h_l, a, d, b = self.unpack(eta)
        c, g, l = self.corner, self.groups, self.local
        j = np.zeros((self.dim, self.dim))
        j[:c, :c] = a
        for k in range(g):
            s = slice(c + k * l, c + (k + 1) * l)
            j[s, s], j[s, :c], j[:c, s] = d[k], b[k], b[k].T
        return np.concatenate([h_c, h_l.ravel()]), j


@dataclass
class ArrowSolution:
    """Mean and the covariance blocks that factors read: corner, per group, group–corner."""

    mean_c: np.ndarray  # (c,)
    mean_l: np.ndarray  # (G, l)
    cov_cc: np.ndarray  # (c, c)
    cov_ll: np.ndarray  # (G, l, l)
    cov_lc: np.ndarray  # (G, l, c)
    logdet: float  # log |J|


def solve(layout: ArrowLayout, eta: np.ndarray) -> ArrowSolution:
    """Mean, covariance blocks and log |J| of the block, by eliminating the groups; raises
    numpy.linalg.LinAlgError when J is not positive definite."""
    h_c, h_l, a, d, b = layout.unpack(eta)
    chol_d = np.linalg.cholesky(d)  # (G, l, l), one small factor per group
    d_inv = _chol_inverse(chol_d)
    d_inv_b = d_inv @ b  # (G, l, c)
    d_inv_h = np.einsum("gij,gj->gi", d_inv, h_l)
    schur = a - np.einsum("gia,gib->ab", b, d_inv_b)
    chol_s = np.linalg.cholesky(schur)
    cov_cc = _chol_inverse(chol_s)
    mean_c = cov_cc @ (h_c - np.einsum("gia,gi->a", b, d_inv_h))
    mean_l = d_inv_h - d_inv_b @ mean_c
    cov_lc = -d_inv_b @ cov_cc
    cov_ll = d_inv - cov_lc @ np.swapaxes(d_inv_b, 1, 2)
    logdet = 2 * (np.sum(np.log(np.diagonal(chol_s))) + np.sum(np.log(np.diagonal(chol_d, axis1=1, axis2=2))))
    return ArrowSolution(mean_c, mean_l, cov_cc, cov_ll, cov_lc, float(logdet))


def _chol_inverse(chol: np.ndarray) -> np.ndarray:
    """(L Lᵀ)⁻¹ from lower Cholesky factors (batched), by two triangular inverses."""
    if chol.shape[-1] == 0:
        return np.zeros(chol.shape)
    eye = np.broadcast_to(np.eye(chol.shape[-1]), chol.shape)
    inv = np.linalg.solve(chol, eye)
    return np.swapaxes(inv, -1, -2) @ inv


def entropy(layout: ArrowLayout, solution: ArrowSolution) -> float:
    """H[N(μ, J⁻¹)] = ½ (n (1 + log 2π) − log |J|)."""
    return 0.5 * (layout.dim * (1.0 + np.log(2 * np.pi)) - solution.logdet)
