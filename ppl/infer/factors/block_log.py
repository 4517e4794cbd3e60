"""The statements that read a Gamma precision τ in a Gaussian block through u = log τ
(`block (mu_a, a, tau_a)`): its prior and the Normal statements it is the precision of.

With (z, u) jointly Gaussian, each term is a closed-form expectation (ppl.infer.tilted):

    tau ~ Gamma(a0, b0), with the Jacobian of τ = e^u:  E[log p] = a0 m_u − b0 E[e^u] + a0 log b0 − log Γ(a0)
    v ~ Normal(m, s τ), d = v − m = c_pᵀz + e_p:        E[log p] = ½(log s + m_u − log 2π) − ½ s E[e^u d²]

and the message of a term L(m, Σ) to the block is its natural gradient, the Gaussian whose
J = −2 ∂L/∂Σ and h = ∂L/∂m + J m (Opper & Archambeau). A Normal term's J couples u with the
corner and with its group's coordinates only, so the precision stays arrow-shaped: u is a global
row like mu. It is a Newton step, not a conjugate one: J may be indefinite far from the optimum,
and the block's update searches its step (ppl.infer.block_step).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from ppl.diagnostics import ModelError
from ppl.infer.factors.base import FactorRuntime
from ppl.infer.factors.block import BlockGaussian
from ppl.infer.factors.gaussian import LOG_2PI
from ppl.infer.tilted import tilted_mean, tilted_square


def _u(state, key: str, at: int):
    """(m_u, s_uu) of the block's coordinate `at`."""
    sol = state.moments(key)
    return sol.mean_c[at], sol.cov_cc[at, at]


def _corner_message(layout, at: int, h: float, j: float) -> np.ndarray:
    """h_u = `h`, J_uu = `j` as a natural parameter of the block."""
    c, g, l = layout.corner, layout.groups, layout.local
    h_c, a = np.zeros(c), np.zeros((c, c))
    h_c[at], a[at, at] = h, j
    return layout.pack(h_c, np.zeros((g, l)), a, np.zeros((g, l, l)), np.zeros((g, l, c)))[None, :]


class BlockLogGamma(FactorRuntime):
    """`tau ~ Gamma(a0, b0)` with τ = e^u in the block."""

    def __init__(self, factor, model, env, dataset, families, block):
        super().__init__(factor, model, env, dataset)
        family = families[block.key]
        self.shape, self.rate = (float(np.ravel(self.data(factor.args[r]))[0]) for r in ("shape", "rate"))
        self.block_key, self.layout = block.key, family.layout
        self.at = family.placements[factor.target.name].base
        self.reads = {block.key: []}

    def _expected_log(self, state):
        m_u, s_uu = _u(state, self.block_key, self.at)
        a, b = self.shape, self.rate
        value = a * np.log(b) - gammaln(a) + a * m_u - b * tilted_mean(m_u, s_uu)[0]
        return np.full(self.builder.shape(), value)

    def message(self, state, name, factored=False):
        m_u, s_uu = _u(state, self.block_key, self.at)
        _, grad = tilted_mean(m_u, s_uu)  # L = a m_u − b E[e^u]: J_uu = 2b ∂E/∂s_uu, h_u = a − b ∂E/∂m_u + J m_u
        j = 2 * self.rate * grad["s_uu"]
        return _corner_message(self.layout, self.at, self.shape - self.rate * grad["m_u"] + j * m_u, j)

    def _message(self, state, access):
        raise AssertionError("a block member's prior sends its message to the block")


class BlockLogNormal(BlockGaussian):
    """`v ~ Normal(m, s·tau)` with τ = e^u in the block and v, m reading members and data."""

    def __init__(self, factor, model, env, dataset, families, block):
        super().__init__(factor, model, env, dataset, families, block)
        outside = [n for n in self.reads if n != block.key and n not in block.members]
        if outside:  # a missing cell of the value: its q would be correlated with u
            raise ModelError("E633", f"`{factor.name}` has a block member as its precision and reads `{outside[0]}`, "
                             "which is outside the block", span=factor.span,
                             hint="leave the precision out of the block (its Gamma q)")
        tau = self.precision.access.name
        self.at = families[block.key].placements[tau].base
        self.layout = families[block.key].layout
        self.scale = np.broadcast_to(self.precision.scale, self.builder.shape()).reshape(-1)

    def _tilted(self, state):
        """(E[cᵀz], m_u, E[e^u d²] and its derivatives) per element, flat."""
        sol = state.moments(self.block_key)
        size = self.scale.size
        e1, ev = (np.broadcast_to(x, self.builder.shape()).reshape(-1) for x in self._residual(state))
        b1, bv = self.rows.mean(sol), self.rows.variance(sol)
        m_u, s_uu = _u(state, self.block_key, self.at)
        value, grad = tilted_square(m_u, s_uu, b1 + e1, self.rows.cross(sol, self.at), bv + ev)
        return np.broadcast_to(b1, size), m_u, value, grad

    def _expected_log(self, state):
        _, m_u, value, _ = self._tilted(state)
        out = 0.5 * (np.log(self.scale) + m_u - LOG_2PI) - 0.5 * self.scale * value
        return out.reshape(self.builder.shape())

    def message(self, state, name, factored=False):
        if name != self.block_key:
            return super().message(state, name, factored)
        b1, m_u, _, g = self._tilted(state)
        count = self.count(self.block_key)
        weight = np.ones_like(b1) if count is None else np.broadcast_to(count, self.builder.shape()).reshape(-1)
        k = 0.5 * weight * self.scale  # L_p = ½ω(log s + m_u) − k E[e^u d²] + const
        # J = 2k (g_ss ccᵀ + ½ g_sd (c e_uᵀ + e_u cᵀ) + g_uu e_u e_uᵀ) = 2k g_ss c'c'ᵀ + 2k (g_uu − g_ss α²) e_u e_uᵀ
        # with c' = c + α e_u, α = g_sd / (2 g_ss); h = ∂L/∂m + J m, split between c' and e_u
        alpha = g["s_ud"] / (2 * g["s_dd"])
        tau = 2 * k * g["s_dd"]
        corner = self.rows.cg.copy()
        corner[:, self.at] += alpha
        target = b1 + alpha * m_u - g["m_d"] / (2 * g["s_dd"])
        extra_j = 2 * k * (g["s_uu"] - g["s_dd"] * alpha ** 2)
        extra_h = 0.5 * weight - k * g["m_u"] + k * g["m_d"] * alpha + extra_j * m_u
        return self.rows.message(tau, target, corner) + _corner_message(self.layout, self.at, np.sum(extra_h),
                                                                         np.sum(extra_j))
