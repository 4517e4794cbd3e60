"""E[lse(η)], E[p(η)] and the curvature E[diag p − ppᵀ] for η ~ N(m, C), a K-vector of margins
correlated across the classes (a Gaussian block holding every class's weights): what NC-VMP's
joint softmax site (ppl.infer.factors.block_softmax) integrates.

−E[∇² log f] = E[diag p − ppᵀ] couples the classes. Its diagonal is the E[p(1 − p)] of
`softmax_moments.averages`, and each row sums to 0 (Σ_l p_l = 1), so E[p_j p_l] (j ≠ l) follows
from the diagonal when K ≤ 3: E[p_j(1 − p_j)] = Σ_{l≠j} E[p_j p_l] is K equations in the K(K − 1)/2
pairs, and for K = 3, E[p_0 p_1] = (d_0 + d_1 − d_2)/2 and so on. Those come from the accurate
product rule over the differences. For K ≥ 4 the pairs are not determined, and all three averages
come from the fixed quasi-random points (`softmax_moments.fixed_points`, about 2e-4 from the
integral), η = m + Lε with L a factor of C.
"""

from __future__ import annotations

import numpy as np

from ppl.infer.softmax_moments import averages, fixed_point_averages, semidefinite_cholesky


def joint_averages(m: np.ndarray, cov: np.ndarray):
    """(E[lse] (rows,), E[p] (rows, K), E[diag p − ppᵀ] (rows, K, K)) for m (rows, K) and cov
    (rows, K, K)."""
    k = m.shape[-1]
    if k <= 3:
        lse, p1, p2 = averages(m, np.diagonal(cov, axis1=1, axis2=2).copy(), cov=cov)
        return lse, p1, _from_diagonal(p2)
    return _sampled(m, semidefinite_cholesky(cov))


def _from_diagonal(d: np.ndarray) -> np.ndarray:
    """The curvature from its diagonal d = E[p(1 − p)] when K ≤ 3 (rows sum to 0)."""
    k = d.shape[-1]
    curvature = d[..., None] * np.eye(k)
    if k == 2:
        curvature[:, 0, 1] = curvature[:, 1, 0] = -d[:, 0]
    elif k == 3:
        for j, l in ((0, 1), (0, 2), (1, 2)):
            other = 3 - j - l
            curvature[:, j, l] = curvature[:, l, j] = -0.5 * (d[:, j] + d[:, l] - d[:, other])
    return curvature


def _sampled(m: np.ndarray, chol: np.ndarray):
    """The three averages over the fixed points η = m + Lε (`softmax_moments`' log-domain average,
    with the pairs E[p pᵀ])."""
    rows, k = m.shape
    lse, p1, p2, pairs = np.empty(rows), np.empty((rows, k)), np.empty((rows, k)), np.empty((rows, k, k))
    fixed_point_averages(m, chol, np.arange(rows), lse, p1, p2, pairs)
    return lse, p1, p1[:, :, None] * np.eye(k) - pairs
