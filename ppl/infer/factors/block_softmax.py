"""`y ~ Categorical(softmax(η))` whose class weights are members of a Gaussian block, under
Böhning's bound: the classes' weights in one joint q.

Under mean field the classes' weights are fitted apart, and on covariates far from 0 (an
intercept beside raw covariates) or along the softmax's shift (adding c to every class's weights
moves no probability) their q is far too narrow. With the block, η_n = C_n z + r_n (C_n: K rows
c_nk over the block's coordinates, r_n data) has the joint covariance C_n Σ C_nᵀ, and Böhning's
bound lse(η) ≤ lse(ψ) + p(ψ)ᵀ(η − ψ) + ½(η − ψ)ᵀA(η − ψ), A = ½[I − 11ᵀ/K], at ψ_n = E[η_n] gives

    E[log f] ≥ m_y − lse(m) − ½ tr(A Cov η) = m_y − lse(m) − ¼ Σ_k Var η_k + (1/4K) Var Σ_k η_k,
    m → z:  J = Σ_n C_nᵀ A C_n,   h = Σ_n C_nᵀ (onehot(y) − p(m) + A (m − r)),

a linear-Gaussian message in z whose J does not depend on q: each update is the exact
maximiser of the bound, so the ELBO (of the bound) never falls. J is summed from per-class rows
(A = ½ I on each class) and the rows of Σ_k c_nk (the rank-one −(1/2K) 11ᵀ), each a `BlockRows`
message. Only Böhning's bound runs in a block (E381 for another rule), with outcomes given in
every row and η reading block members and data alone. Prediction folds in with the members'
marginals and adds the classes' joint covariance (ppl.infer.predict.block_spread).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ppl.infer import softmax
from ppl.infer.block import BlockRows
from ppl.infer.factors.block import block_parts, refuse
from ppl.infer.factors.softmax import SoftmaxFactor
from ppl.infer.linear import LinearForm, margin

RULE = "bound:bohning"


class BlockSoftmax(SoftmaxFactor):
    """A softmax likelihood whose classes' margins read the members of `block`."""

    def __init__(self, factor, model, env, dataset, families, options, block):
        super().__init__(factor, model, env, dataset, families, RULE, options)
        if self.missing is not None:
            raise refuse(factor, "whose outcome has empty cells (a block's softmax does not impute them)")
        family, members, elements = families[block.key], set(block.members), int(np.prod(self.plate.shape))
        self.block_key, self.rows, self.rests, together = block.key, [], [], []
        for form in self.forms:
            parts, rest = block_parts(self, form, members)
            outside = sorted({r.name for term in rest for r in term.reads()})
            if outside:
                raise refuse(factor, f"beside `{outside[0]}`, outside the block: a block's softmax reads its "
                                     "members and data alone")
            self.rows.append(BlockRows(family, parts, elements, factor.span))
            self.rests.append(LinearForm(form.offset, rest, form.event))
            together += parts
        self.total = BlockRows(family, together, elements, factor.span)  # the rows of Σ_k η_k
        self.reads[block.key] = []
        self._joint_key = None

    def margin_reads(self) -> set:
        return {self.block_key}

    def joint(self, state):
        """(m (P, K), r (P, K), Var η_k (P, K), Var Σ_k η_k (P,)) under the block's q."""
        key = self.version_key(state, (self.block_key,))
        if self._joint_key != key:
            sol = state.moments(self.block_key)
            offset = np.stack([np.broadcast_to(margin(state, rest)[0], self.builder.shape()).reshape(-1)
                               for rest in self.rests], -1)
            mean = np.stack([rows.mean(sol) for rows in self.rows], -1) + offset
            var = np.stack([rows.variance(sol) for rows in self.rows], -1)
            self._joint_key, self._joint = key, (mean, offset, var, self.total.variance(sol))
        return self._joint

    def _margin(self, state):
        """(m, Var η_k), (P, K): the widest margin at the start (ppl.infer.initialise)."""
        mean, _, var, _ = self.joint(state)
        return mean, var

    def message(self, state, name, factored=False):
        if name != self.block_key:
            return super().message(state, name, factored)
        mean, offset, _, _ = self.joint(state)
        k = self.classes
        centred = mean - offset  # C_n μ
        pull = softmax.onehot(self.y.reshape(-1), k) - special.softmax(mean, axis=-1) \
            + 0.5 * (centred - centred.mean(-1, keepdims=True))  # onehot − p + A C μ
        count = self.count(self.block_key)
        weight = np.ones(len(mean)) if count is None else np.broadcast_to(count, self.builder.shape()).reshape(-1)
        total = self.total.message(-weight / (2 * k), np.zeros(len(mean)))
        for j, rows in enumerate(self.rows):  # ½ c c ᵀ per class, target 2 b: h = Σ_k c_k b_k
            total = total + rows.message(0.5 * weight, 2.0 * pull[:, j])
        return total

    def _expected_log(self, state):
        mean, _, var, spread = self.joint(state)
        k = self.classes
        y = self.y.reshape(-1)
        term = mean[np.arange(len(y)), y] - special.logsumexp(mean, axis=-1) - 0.25 * var.sum(-1) \
            + spread / (4 * k)
        return term.reshape(self.builder.shape())
