"""The Gaussian message of a linear form to one of its reads: from a Gaussian likelihood or a
Gaussian site with precision τ and target y, the read u of m = a·u + b receives
(E[τ] E[a] (E[y] − E[b]), −½ E[τ] E[a²]), with E[a aᵀ] for a vector read. A read contracted with
data rows keeps the message as its factors (`OuterMessage`) so that the node sums it by BLAS
products or solves it by Woodbury.
"""

from __future__ import annotations

import numpy as np

from ppl.families.base import stack_last
from ppl.infer.access import Unsupported
from ppl.infer.linear import (LinearForm, contraction, expand, scalar_part, term_mean, vector_dim,
                              vector_moments)
from ppl.infer.low_rank import GaussianSum


def read_message(state, form: LinearForm, access, prec, target, factor):
    """The Gaussian message to one read u of the linear form m = a·u + b, from a Gaussian
    likelihood (or Gaussian site) with precision `prec` and observed/expected value `target`:

        (E[τ] E[a] (E[y] − E[b]),  −½ E[τ] E[a²])        (vector reads: E[a aᵀ], and Λ for τ)
    """
    term = form.term_of(access)
    others = form.offset
    for other in form.terms:
        if other is not term:
            others = others + term_mean(state, other)
    residual = target - others  # E[y] − E[b]
    if access is term.vector or access is term.vector2:
        s1, s2 = scalar_part(state, term)
        if term.vector2 is not None:  # bilinear, a = coef ∘ (the other vector) · Π s
            other = term.vector2 if access is term.vector else term.vector
            o1, o2 = vector_moments(state, other, vector_dim(state, other))
            c = term.coef
            h = expand(prec * residual * s1) * c * o1
            return pack(h, expand(expand(-0.5 * prec * s2)) * (c[..., :, None] * c[..., None, :]) * o2)
        if term.contract:  # scalar mean, a = coef · Π s (a D-vector)
            return OuterMessage(term.coef, prec * residual * s1, -0.5 * prec * s2, term.rows)
        a1, a2 = term.coef * s1, term.coef ** 2 * s2  # vector mean, scalar coefficient
        h = np.einsum("...ij,...j->...i", prec, residual) * expand(a1)
        return pack(h, -0.5 * expand(expand(a2)) * prec)
    s1, s2 = scalar_part(state, term, skip=access)
    if term.vector is None:
        a1, a2 = term.coef * s1, term.coef ** 2 * s2
    else:
        if not term.contract:
            raise Unsupported(f"a scalar latent times a vector latent in `{factor.name}`", factor.span)
        x1, x2 = contraction(state, term)
        a1, a2 = x1 * s1, x2 * s2
    if form.event:
        raise Unsupported(f"a scalar latent scaling the vector mean of `{factor.name}`", factor.span)
    return stack_last(prec * a1 * residual, -0.5 * prec * a2)


class OuterMessage:
    """Σ over the plate of (h_n a_n, vec(j_n a_n a_nᵀ)), kept as its factors: the rows a_n of the
    data and the weights h_n, j_n. Summed with `weighted_sum` it is two BLAS products,
    aᵀ(w·h) and aᵀ diag(w·j) a, never a plate × D × D array (`dense` makes that array)."""

    def __init__(self, rows, h, j, flat=None):
        self.rows, self.h, self.j = rows, h, j
        self.flat = flat  # the rows as (rows, D), the same array each sweep (`Term.rows`), or None

    def weighted_sum(self, weights):
        """(1, D + D²): the message summed over the plate with weights (plate + (1,))."""
        return self.low_rank(weights).dense()

    def low_rank(self, weights):
        """The weighted sum kept as its rows: a `GaussianSum` the node can solve by Woodbury."""
        d = self.rows.shape[-1]
        if self.rows.shape[:-1] == weights.shape:
            rows = self.flat if self.flat is not None else self.rows.reshape(-1, d)
        else:
            rows = np.broadcast_to(self.rows, np.broadcast_shapes(self.rows.shape, weights.shape + (d,))).reshape(-1, d)
        h, j = _weighted(weights, self.h).reshape(-1), _weighted(weights, self.j).reshape(-1)
        return GaussianSum(0.0, [(rows, h, -2 * j)])

    def dense(self):
        outer = np.einsum("...i,...j->...ij", self.rows, self.rows)
        return pack(expand(self.h) * self.rows, expand(expand(self.j)) * outer)


def _weighted(weights, a):
    """weights × a over the weights' shape (`a` broadcast to it)."""
    product = weights * a
    return product if product.shape == weights.shape else np.broadcast_to(product, weights.shape)


def pack(h, j):
    """(h, vec J) as one flat message; the two may broadcast against each other (plate-free reads)."""
    j = j.reshape(j.shape[:-2] + (-1,))
    if h.shape[:-1] != j.shape[:-1]:  # numpy's broadcast helpers cost a dozen Python calls each: only when needed
        lead = np.broadcast_shapes(h.shape[:-1], j.shape[:-1])
        h, j = np.broadcast_to(h, lead + h.shape[-1:]), np.broadcast_to(j, lead + j.shape[-1:])
    return np.concatenate([h, j], axis=-1)
