"""The floor of the HMM benchmark: VB-EM for an HMM with Gaussian emissions (Beal 2003, ch. 3:
Dirichlet rows, a Normal–Gamma per state, the bound every sweep) as a numerical-computing expert
writes it in numpy, with every trick the engine is asked to match (issue 17):

- the sequences time-major and longest first, padded to (L, S), so that step t of the recursions
  reads one contiguous block, the n_t sequences still running; every buffer is allocated once
  and each step's views are taken once, so the loop over steps slices nothing, and passes `out`
  by position;
- Rabiner's scaled forward–backward in probability space: one exp of the log-likelihoods less
  their row maximum and one of E[log A] per sweep; log Z = Σ log c_t + Σ maxima;
- one sequence: the step's evidence and normaliser folded into its matrix,
  M_t = [A ∘ e_tᵀ | A e_t] (K × (K + 1), all t in one product), so that a forward step is one
  matrix–vector product (â_{t−1} M_t gives the unnormalised message and c_t together) and one
  division by a 0-d view, and a backward step one product with A ∘ (e_t / c_t)ᵀ;
- many sequences: a step is one (n_t, K) × (K, K) product on the block, the evidence and the
  normaliser (a row sum as a product with ones, cheaper than a reduction over K) in place;
- the statistics in one pass, by BLAS: Σ γ (1, y, y²) as γᵀ F with F = [1, y, y²] (0 past the
  ends), Σ ξ as Ã ∘ (Σ_t â_{t−1}ᵀ g_t) with g_t = e_t b̂_t / c_t, no T × K × K array; the
  log-likelihoods as F G with the quadratic (y − m)² folded into G, their row maxima by K column
  passes.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln

LOG_2PI = np.log(2 * np.pi)


def kl_dirichlet(a, a0):
    """KL(Dir(a) ‖ Dir(a0)) over the last axis."""
    return (gammaln(a.sum(-1)) - gammaln(a).sum(-1) - gammaln(a0.sum(-1)) + gammaln(a0).sum(-1)
            + ((a - a0) * (digamma(a) - digamma(a.sum(-1, keepdims=True)))).sum(-1))


class FloorVBHMM:
    """VB-EM for y_t | z_t ~ N(μ_z, 1/λ_z), rows of A and π ~ Dir(1), (μ_k, λ_k) ~
    NormalGamma(m0, β0, a0, b0), sequences of `lengths` held one after another in `y`, from the
    responsibilities `gamma` (rows, K); `sweep()` is one M-step, E-step and bound."""

    def __init__(self, y, lengths, gamma, prior):
        self.m0, self.beta0, self.a0, self.b0 = prior
        lengths = np.asarray(lengths)
        order = np.argsort(-lengths, kind="stable")
        steps = np.arange(lengths.max())[:, None]
        running = steps < lengths[order]
        rows = np.where(running, (np.cumsum(lengths) - lengths)[order] + steps, 0)
        yp = np.where(running, y[rows], 0.0)
        self.design = np.stack([running, yp, yp * yp], axis=-1).reshape(-1, 3)  # (L S, 3)
        (length, s), k = running.shape, gamma.shape[1]
        self.k, self.ones = k, np.ones(k)
        start = np.where(running[..., None], gamma[rows], 0.0)
        self.stats = self._statistics(start, start, start, 1.0)
        self.log_like, self.shift = np.empty((length * s, k)), np.empty(length * s)
        self.like, self.scaled = np.empty((length, s, k)), np.empty((length, s, k))
        self.alpha, self.gamma = np.zeros((length, s, k)), np.empty((length, s, k))
        self.back, self.g = np.ones((length, s, k)), np.zeros((length, s, k))
        if s == 1:
            self._views_one(length)
        else:
            self._views_many(running.sum(axis=1).tolist())

    def _views_one(self, length):
        """One sequence: the step matrices M_t (L, K, K + 1), the unnormalised messages and c_t
        (L, K + 1), A ∘ (e_t / c_t)ᵀ (L, K, K), and each step's views of them."""
        k = self.k
        self.mat, self.f = np.empty((length, k, k + 1)), np.empty((length, k + 1))
        self.back_mat = np.empty((length, k, k))
        self.norm = self.f[:, k:]
        alpha, back = list(self.alpha[:, 0]), list(self.back[:, 0])
        message, norm = list(self.f[:, :k]), [row[k, ...] for row in self.f]  # 0-d views: the cheapest divisor
        self.forward = list(zip(alpha[:-1], message[:-1], norm[:-1], list(self.mat)[1:], list(self.f)[1:]))
        self.last = (message[-1], norm[-1], alpha[-1])
        self.backward = list(zip(list(self.back_mat)[:0:-1], back[:0:-1], back[-2::-1]))
        self._pass = self._one

    def _views_many(self, active):
        """Many sequences: per step t the blocks [:n_t] of α̂, α̂_{t−1}, e, c, b̂, g and b̂_t[:n_{t+1}]."""
        self.norm = np.ones(self.shift.shape).reshape(self.alpha.shape[:2])
        block = [(self.alpha[t, :n], self.alpha[t - 1, :n], self.like[t, :n], self.norm[t, :n], self.norm[t, :n, None],
                  self.scaled[t, :n], self.back[t, :n], self.g[t, :n]) for t, n in enumerate(active)]
        self.forward = [b[:5] for b in block]
        self.backward = [(block[t + 1][7], self.back[t, :n], *block[t][5:])
                         for t, n in reversed(list(enumerate(active[1:])))]
        self.last = block[-1][5:]
        self._pass = self._many

    def _statistics(self, gamma, before, after, pair):
        """(Σ γ (1, y, y²) (K, 3), Σ γ_1 (K,), Σ ξ (K, K)) with ξ_t = pair ∘ (before_{t−1} ⊗ after_t)."""
        k = self.k
        cross = before[:-1].reshape(-1, k).T @ after[1:].reshape(-1, k)
        return gamma.reshape(-1, k).T @ self.design, gamma[0].sum(axis=0), pair * cross

    def sweep(self) -> float:
        """One M-step from the statistics, one E-step (forward–backward), the bound at that point."""
        (suff, first, pairs), k = self.stats, self.k
        alpha_pi, alpha_a = 1.0 + first, 1.0 + pairs
        count, total, square = suff.T
        beta = self.beta0 + count
        m = (self.beta0 * self.m0 + total) / beta
        a = self.a0 + count / 2
        b = self.b0 + 0.5 * (square + self.beta0 * self.m0 ** 2 - beta * m ** 2)
        prec, log_prec = a / b, digamma(a) - np.log(b)
        coef = np.stack([0.5 * (log_prec - LOG_2PI - 1 / beta - prec * m * m), prec * m, -0.5 * prec])
        np.dot(self.design, coef, out=self.log_like)
        self.shift[:] = self.log_like[:, 0]
        for column in self.log_like.T[1:]:  # K column passes: numpy's max over a short last axis is ~15× slower
            np.maximum(self.shift, column, out=self.shift)
        like = self.like.reshape(self.log_like.shape)
        np.subtract(self.log_like, self.shift[:, None], out=like)
        np.exp(like, out=like)
        start = np.exp(digamma(alpha_pi) - digamma(alpha_pi.sum()))
        trans = np.exp(digamma(alpha_a) - digamma(alpha_a.sum(axis=1, keepdims=True)))
        self._pass(start, trans)
        np.multiply(self.alpha, self.back, out=self.gamma)
        self.stats = self._statistics(self.gamma, self.alpha, self.g, trans)
        log_z = np.log(self.norm).sum() + self.shift.sum()
        kl_mean = 0.5 * (self.beta0 / beta - 1 - np.log(self.beta0 / beta) + self.beta0 * prec * (m - self.m0) ** 2)
        kl_gamma = ((a - self.a0) * digamma(a) - gammaln(a) + gammaln(self.a0) + self.a0 * np.log(b / self.b0)
                    + a * (self.b0 - b) / b)
        return float(log_z - kl_dirichlet(alpha_pi, np.ones(k)) - kl_dirichlet(alpha_a, np.ones((k, k))).sum()
                     - (kl_mean + kl_gamma).sum())

    def _one(self, start, trans):
        """Forward–backward on one sequence: one product and one division per forward step, one
        product per backward step (`out` by position: a keyword costs about 0.1 µs a call)."""
        k, like, scaled = self.k, self.like[:, 0], self.scaled[:, 0]
        divide, dot = np.divide, np.dot
        np.multiply(trans, like[:, None, :], out=self.mat[:, :, :k])
        self.mat[:, :, k] = like @ trans.T
        np.multiply(start, like[0], out=self.f[0, :k])
        self.f[0, k] = self.f[0, :k].sum()
        for alpha, message, norm, mat, f in self.forward:
            divide(message, norm, alpha)
            dot(alpha, mat, f)
        message, norm, alpha = self.last
        divide(message, norm, alpha)
        divide(like, self.norm, scaled)
        np.multiply(trans, scaled[:, None, :], out=self.back_mat)
        for mat, after, back in self.backward:
            dot(mat, after, back)
        np.multiply(scaled, self.back[:, 0], out=self.g[:, 0])

    def _many(self, start, trans):
        """Forward–backward on the blocks of running sequences: one (n_t, K) × (K, K) product per step."""
        across, ones = np.ascontiguousarray(trans.T), self.ones
        multiply, dot, divide = np.multiply, np.dot, np.divide
        alpha, _, like, norm, column = self.forward[0]
        multiply(start, like, alpha)
        dot(alpha, ones, norm)
        divide(alpha, column, alpha)
        for alpha, before, like, norm, column in self.forward[1:]:
            dot(before, trans, alpha)
            multiply(alpha, like, alpha)
            dot(alpha, ones, norm)
            divide(alpha, column, alpha)
        divide(self.like, self.norm[..., None], self.scaled)
        scaled, back, g = self.last
        multiply(scaled, back, g)
        for g_next, part, scaled, back, g in self.backward:
            dot(g_next, across, part)
            multiply(scaled, back, g)
