"""The scaled forward–backward messages of one discrete chain by blocked prefix products: a few
tens of numpy calls in all, where the step-by-step recursions make three or four a step (each
0.2–0.4 µs of fixed cost: on a chain of a few hundred steps the calls are the time).

With the step matrices A_t = W_t ∘ e_tᵀ (e_t = exp(u_t − max u_t)), the forward message â_t is the
direction of â_0 A_1 ⋯ A_t and the backward one b̂_t that of A_{t+1} ⋯ A_{L−1} 1. The steps are cut
into blocks of `block_length`; the prefix products inside the blocks are taken for all blocks at
once, one batched product a step; the block products are combined by Hillis–Steele doubling
(log₂ of the number of blocks batched products), and one last product gives every message. The
backward messages are the prefix products of the transposed matrices in reverse order, held
beside the forward ones so that one product serves both. Every product is divided by its sum,
so none underflows as a whole; all numbers are ≥ 0, so each message is accurate to a few ulps
per product it went through (about 1e-15 relative at a few hundred steps, against the
step-by-step recursions). An entry of a product can still round to 0 where the step-by-step
recursions keep the path through it; then the messages break the one-step recursion there,
which the caller checks (forward_backward._consistent). The normalisers are those of the
step-by-step recursions at the messages found, c_t = Σ (â_{t−1} W_t) ∘ e_t, and b̂_t is scaled
so that Σ â_t b̂_t = 1.
"""

from __future__ import annotations

import math

import numpy as np

SHORTEST, LONGEST = 2, 64  # the range of block lengths
FEWEST_STEPS, MOST_STATES = 32, 12  # where the blocked pass is the cheaper one (`pays`)
BOUND = 600.0  # nats by which the entries of a product inside a block may fall before it is divided by its sum


def pays(steps: int, k: int) -> bool:
    """Whether the blocked pass costs less than the step-by-step recursions on one chain: its
    products are K × K by K × K (K³ a step against K²) and its fixed cost is a few tens of calls,
    so it wins from about 32 steps and up to about 12 states (one BLAS thread, blocked against
    the recursions: K = 2, 30 steps 0.10 against 0.12 ms; K = 12, 200 steps 0.42 against 0.58;
    K = 16 even; K = 20, 200 steps 0.91 against 0.66; K = 24, 1000 steps 6.3 against 3.5)."""
    return steps >= FEWEST_STEPS and k <= MOST_STATES


def block_length(moves: int) -> int:
    """Steps per block for `moves` transitions: about √(moves / 5), the least CPU for one chain of
    10² to 10⁴ steps with K = 2 to 4 (products inside the blocks against doublings)."""
    return int(np.clip(round(np.sqrt(moves / 5)), SHORTEST, LONGEST))


class Scan:
    """The buffers of the blocked pass on one chain of `steps` (at least 2) with K states, and
    the views of them each call takes (a view costs 0.1–0.3 µs, about what the numpy call on it
    costs; a pass takes some forty)."""

    def __init__(self, steps: int, k: int):
        moves = steps - 1
        self.length = length = min(block_length(moves), moves)
        self.blocks = blocks = -(-moves // length)
        self.moves = np.empty((blocks * length, k, k))
        self.moves[moves:] = np.eye(k)  # past the last step: the identity, never written again
        self.mats = mats = np.empty((2, length, blocks, k, k))  # [forward, reversed transposed][step in block, block]
        self.rows = rows = np.empty((2, length, blocks, 1, k))
        self.scale = np.empty((2, blocks))
        self.ends, self.joined = np.empty((2, blocks, k, k)), np.empty((2, blocks, k, k))
        self.alpha, self.beta, self.norm = np.empty((steps, k)), np.empty((steps, k)), np.empty(steps)
        self.ones, self.sums = np.ones(k), np.ones(k * k)
        self.log_k = math.log(k)
        # the products inside the blocks: (step before, step, step's sums' operand)
        self.steps = [(mats[:, i - 1], mats[:, i], mats[:, i].reshape(2, blocks, k * k)) for i in range(1, length)]
        self.divisor = self.scale[..., None, None]
        # the doublings d = 1, 2, 4, ... < blocks: (earlier ends, later ends, their products' buffer,
        # its sums' operand, the sums, the sums as divisors)
        self.doublings = [(self.ends[:, :-d], self.ends[:, d:], self.joined[:, :blocks - d],
                           self.joined[:, :blocks - d].reshape(2, blocks - d, k * k), self.scale[:, :blocks - d],
                           self.scale[:, :blocks - d, None, None]) for d in _doublings(blocks)]
        self.last = (mats[:, -1], self.ends.reshape(2, blocks, k * k), rows[:, :, 0], mats[:, :, 0, :1],
                     self.ends[:, None, :-1, :1], mats[:, :, 1:], rows[:, :, 1:])

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in vars(self).values() if isinstance(a, np.ndarray))



def _doublings(blocks: int) -> list:
    """The strides of Hillis–Steele's doublings over `blocks`: 1, 2, 4, ... below it."""
    return [1 << j for j in range((blocks - 1).bit_length())]


def scan(local: np.ndarray, stepped: np.ndarray, b: Scan, span: float = np.inf):
    """(â (L, K), b̂ (L, K), c (L,)) of one chain, or None if a normaliser came out 0 or not a
    number (an underflow): `local` e_t (L, K), `stepped` the shared W (K, K) or W_t (L, K, K),
    `span` a bound on −log of every entry of every A_t (∞ if some are 0). A product of m of them
    (and the first, â_0 or 1 folded in) then has every entry in [e^(−(m + 1) span) / K, K^m]:
    while (block length + 1)(span + log K) ≤ `BOUND` the products inside a block are divided by
    their sums once, at its end (dividing changes no number but its scale: 15% of the time)."""
    steps, k = local.shape
    moves, mats, matmul, divide = b.moves, b.mats, np.matmul, np.divide
    np.multiply(stepped[1:] if stepped.ndim == 3 else stepped, local[1:, None, :], out=moves[:steps - 1])
    np.copyto(mats[0], moves.reshape(b.blocks, b.length, k, k).swapaxes(0, 1))
    np.copyto(mats[1], moves[::-1].reshape(b.blocks, b.length, k, k).swapaxes(0, 1).swapaxes(-1, -2))
    first = local[0] / (local[0] @ b.ones)
    mats[0, 0, 0] = first @ mats[0, 0, 0]  # every row â_0 A_1: the rows of each product are â's
    mats[1, 0, 0] = mats[1, 0, 0].sum(axis=0)  # every row 1ᵀ A_{L−1}ᵀ: those of each product b̂'s
    bounded = (b.length + 1) * (span + b.log_k) <= BOUND
    for before, step, flat in b.steps:
        matmul(before, step, step)
        if not bounded:
            matmul(flat, b.sums, b.scale)
            divide(step, b.divisor, step)
    last, ends_flat, first_rows, first_steps, ends_before, later_steps, later_rows = b.last
    ends = b.ends
    np.copyto(ends, last)
    if bounded:
        matmul(ends_flat, b.sums, b.scale)
        divide(ends, b.divisor, ends)
    for earlier, later, joined, flat, sums, divisor in b.doublings:  # Hillis–Steele: ends[:, j] becomes the product of blocks 0..j
        matmul(earlier, later, joined)
        matmul(flat, b.sums, sums)
        divide(joined, divisor, joined)
        np.copyto(later, joined)
    rows = b.rows
    np.copyto(first_rows, first_steps)
    matmul(ends_before, later_steps, later_rows)
    flat = rows.swapaxes(1, 2).reshape(2, -1, k)  # in time order
    alpha, beta, norm = b.alpha, b.beta, b.norm
    alpha[0] = first
    alpha[1:] = flat[0, :steps - 1]
    alpha /= (alpha @ b.ones)[:, None]
    beta[:-1] = flat[1, ::-1][:steps - 1]
    beta[-1] = 1.0
    beta /= ((alpha * beta) @ b.ones)[:, None]
    norm[0] = local[0] @ b.ones
    ahead = matmul(alpha[:-1, None, :], stepped[1:])[:, 0] if stepped.ndim == 3 else alpha[:-1] @ stepped
    ahead *= local[1:]
    np.matmul(ahead, b.ones, out=norm[1:])
    if not np.all(norm > 0):
        return None
    return alpha, beta, norm
