"""The forward–backward messages of discrete chains as two banded triangular solves (BLAS
`dtbsv`): no Python loop over the steps, about twenty numpy calls for any number of chains.

With the step matrices A_t = W_t ∘ e_tᵀ / ĉ_t (e_t = exp(u_t − max u_t), 0 where a chain starts),
the forward messages of every chain, held in rows, solve one lower-triangular system with unit
diagonal, x_t − x_{t−1} A_t = r_t (r the first steps' e / ĉ), and the backward ones its transpose
with 1 at each chain's last row. In the rows' order (t, k) its matrix has 2K − 1 subdiagonals, so
a solve is one BLAS call of O(T K²) work, the recursions' own sums in Fortran.

A solve cannot divide each step by its normaliser c_t = Σ (â_{t−1} W_t) ∘ e_t as the scaled
recursions do (forward_backward.py); each step is divided by an estimate ĉ_t instead, c_t with the
filtered â_{t−1} taken as the normalised evidence e_{t−1} (exact when the evidence is sharp), and
the messages drift by Π c_t / ĉ_t, which their sums measure. Within `DRIFT` nats (no entry leaves
the floats' range where the recursions' would not, up to e^±DRIFT) they are used; within `FAR`, the
solves are redone once with ĉ_t the c_t of the first solve (ĉ_t times the ratio of consecutive
sums), after which the drift is rounding; beyond, the caller takes the scaled recursions.
The messages agree with the recursions' to about 1e-15 relative.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided

DRIFT = 64.0  # nats the messages may drift from the scaled recursions' and be used as they are
FAR = 600.0  # nats of drift from which the first solve's normalisers are not trusted to redo it
LOW, HIGH = np.exp(-DRIFT), np.exp(DRIFT)


class Band:
    """The band of the forward system for chains in rows (`starts` (T,) the first rows, `firsts`
    their indices) with K states, and the views and buffers that write it. The band is held as
    the transpose of a C-ordered (T K, 2K) array, the Fortran (2K, T K) layout BLAS reads with no
    copy; its entries within a step (k' > k at the same t) are 0."""

    def __init__(self, starts: np.ndarray, firsts: np.ndarray, k: int):
        rows = len(starts)
        lasts = np.append(firsts[1:], rows) - 1
        # the first and last rows of the chains: slices of one row when there is one chain (cheaper to index)
        self.firsts, self.lasts = (slice(0, 1), slice(rows - 1, rows)) if len(firsts) == 1 else (firsts, lasts)
        self.k = k
        self.band = np.zeros((rows * k, 2 * k))
        # step t's −A_t[i, j] at band row K + j − i of column (t − 1) K + i: a (T − 1, K, K) view
        size = self.band.itemsize
        self.steps = as_strided(self.band.reshape(-1)[k:], shape=(max(rows - 1, 0), k, k),
                                strides=(2 * k * k * size, (2 * k - 1) * size, size))
        # the same region as (K, 2K − 1, T − 1): A_t's rows each followed by K − 1 entries that are 0
        # (or the unit diagonal, never read), written by one product of the padded −W (K, 2K − 1) and
        # e_t / ĉ_t (padded with 0, (2K − 1, T)) that runs along t (3× faster than along rows of K)
        self.wide = as_strided(self.band.reshape(-1)[k:], shape=(k, 2 * k - 1, max(rows - 1, 0)),
                               strides=((2 * k - 1) * size, size, 2 * k * k * size))
        self.padded, self.scaled = np.zeros((k, 2 * k - 1, 1)), np.zeros((2 * k - 1, rows))
        self.cut = np.flatnonzero(starts[1:])  # steps that start a chain: no coupling to the row before
        self.owner = None if len(firsts) == 1 else np.repeat(np.arange(len(firsts)), np.diff(np.append(firsts, rows)))
        self.ones = np.ones(k)

    @property
    def nbytes(self) -> int:
        return self.band.nbytes


def messages(local: np.ndarray, weights: np.ndarray, band: Band):
    """(â (T, K), b̂ (T, K), c (T,)) in row order as the scaled recursions' `_scaled_moments` reads
    them (â_t b̂_t = q(z_t), log Z the sum of log c over a chain), or None when the drift is beyond
    `FAR` or the solves broke down. `local` e_t (T, K), `weights` the shared W (K, K) or W_t
    (T, K, K); â is â_t Π c / ĉ divided by the chain's Z̃ = Σ_k x_last (so that q sums to 1), b̂
    the backward solve, c the ĉ_t with each chain's Z̃ folded into its first row."""
    sums = local @ band.ones
    ahead = local[:-1] @ weights if weights.ndim == 2 else np.matmul(local[:-1, None, :], weights[1:])[:, 0]
    estimate = np.empty(len(local))
    np.matmul(np.multiply(ahead, local[1:], out=ahead), band.ones, out=estimate[1:])
    estimate[1:] /= sums[:-1]
    estimate[band.firsts] = sums[band.firsts]  # x at a chain's first row: e / Σ e, the filtered â
    if not estimate.min() > 0:  # a path the estimate's â cannot take: the first row's scale there
        estimate = np.where(estimate > 0, estimate, sums)
    for _ in range(2):
        forward, backward, totals = _solve(local, weights, estimate, band)
        low, high = totals.min(), totals.max()  # NaN in either fails every test below
        if not LOW <= low <= high <= HIGH:
            if not np.exp(-FAR) <= low <= high <= np.exp(FAR):
                return None
            estimate[1:] *= totals[1:] / totals[:-1]  # c_t = ĉ_t Σ x_t / Σ x_{t−1}; first rows: Σ x = 1
            estimate[band.firsts] = sums[band.firsts]
            continue
        z = totals[band.lasts]
        forward /= z[:, None] if band.owner is None else z[band.owner][:, None]
        estimate[band.firsts] *= z
        return forward, backward, estimate
    return None


def _solve(local, weights, estimate, band):
    """(x (T, K), y (T, K), Σ_k x_t (T,)): the forward and backward solves at normalisers `estimate`."""
    k = band.k
    scaled = np.divide(local.T, estimate, out=band.scaled[:k])  # e_t / ĉ_t, (K, T)
    if weights.ndim == 2:
        np.negative(weights, out=band.padded[:, :k, 0])
        np.multiply(band.padded, band.scaled[:, 1:], out=band.wide)
    else:
        np.multiply(weights[1:], scaled.T[1:, None, :], out=band.steps)
        np.negative(band.steps, out=band.steps)
    if len(band.cut):
        band.steps[band.cut] = 0.0
    x = np.zeros(local.shape)  # (np.zeros_like costs a Python call more)
    x[band.firsts] = scaled.T[band.firsts]
    solve = _dtbsv()
    x = solve(2 * k - 1, band.band.T, x.reshape(-1), lower=1, diag=1, overwrite_x=1).reshape(-1, k)
    y = np.zeros(local.shape)
    y[band.lasts] = 1.0
    y = solve(2 * k - 1, band.band.T, y.reshape(-1), lower=1, trans=1, diag=1, overwrite_x=1).reshape(-1, k)
    return x, y, x @ band.ones


@functools.cache
def _dtbsv():
    """BLAS's banded triangular solve, imported at the first chain solved: scipy.linalg costs start-up
    that a run without a chain does not pay (tests/test_binding.py)."""
    from scipy.linalg.blas import dtbsv
    return dtbsv
