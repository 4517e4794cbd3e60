"""Closed-form Gaussian expectations of a log-normal precision τ = e^u, for a Gamma member of a
Gaussian block (ppl.infer.factors.block_log): no sampling, no quadrature.

For (u, d) jointly Gaussian, tilting by e^u shifts d's mean by Cov(u, d) and keeps its variance:

    E[e^u]    = e^{m_u + s_uu/2}
    E[e^u d²] = e^{m_u + s_uu/2} [(m_d + s_ud)² + s_dd]

`tilted_square` returns the second with its derivatives in (m_u, s_uu, m_d, s_ud, s_dd), from
which the factor assembles its natural-gradient message (tests/test_block_log.py checks them by
finite differences).
"""

from __future__ import annotations

import numpy as np


def tilted_square(m_u, s_uu, m_d, s_ud, s_dd):
    """(E[e^u d²], {parameter: derivative}) elementwise."""
    k = np.exp(m_u + 0.5 * s_uu)
    w = m_d + s_ud
    value = k * (w * w + s_dd)
    return value, {"m_u": value, "s_uu": 0.5 * value, "m_d": 2 * k * w, "s_ud": 2 * k * w, "s_dd": k}


def tilted_mean(m_u, s_uu):
    """(E[e^u], {parameter: derivative})."""
    value = np.exp(m_u + 0.5 * s_uu)
    return value, {"m_u": value, "s_uu": 0.5 * value}
