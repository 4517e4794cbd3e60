"""`y ~ Categorical(softmax(η))` whose class weights are members of a Gaussian block: the classes'
weights in one joint q, under NC-VMP or Böhning's bound.

Under mean field the classes' weights are fitted apart, and along the softmax's shift (adding c
to every class's weights moves no probability) or beside covariates far from 0 their q can be far
too narrow. With the block, η_n = C_n z + r_n (C_n: K rows c_nk over the block's coordinates, r_n
data) has the joint covariance C_n Σ C_nᵀ, and each rule gives a K-vector site per row, a
curvature Λ_n (K × K) and a gradient g_n:

    m → z:  J = Σ_n C_nᵀ Λ_n C_n,   h = Σ_n C_nᵀ (g_n + Λ_n (m_n − r_n)),

- `ncvmp`: g = onehot(y) − E[p], Λ = E[diag p − ppᵀ] under the joint q(η_n)
  (ppl.infer.softmax_joint), E[log f] = m_y − E[lse(η)]: the natural-gradient step on the exact
  expectation, damped like NC-VMP's mean-field steps;
- `bound:bohning`: g = onehot(y) − softmax(m), Λ = A = ½[I − 11ᵀ/K], the bound at ψ_n = m_n:
  E[log f] ≥ m_y − lse(m) − ¼ Σ_k Var η_k + (1/4K) Var Σ_k η_k. J is constant and each update
  maximises the bound exactly: it never falls.

Other rules are E381 (a class site of one class's curvature has no cross-class term), as are
empty outcomes and margins reading latents outside the block. Prediction folds in with the
members' marginals and adds the classes' joint covariance (ppl.infer.predict.block_spread).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ppl.infer import softmax
from ppl.infer.block import BlockRows
from ppl.infer.factors.block import block_parts, refuse
from ppl.infer.factors.softmax import SoftmaxFactor
from ppl.infer.linear import LinearForm, margin
from ppl.infer.softmax_joint import joint_averages

RULES = ("ncvmp", "bound:bohning")


class BlockSoftmax(SoftmaxFactor):
    """A softmax likelihood whose classes' margins read the members of `block`."""

    def __init__(self, factor, model, env, dataset, families, rule, options, block):
        super().__init__(factor, model, env, dataset, families, rule, options)
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
        self.total = BlockRows(family, together, elements, factor.span)  # Σ_k η_k; each row's group
        self.reads[block.key] = []
        self._joint_key = None

    def margin_reads(self) -> set:
        return {self.block_key}

    def joint(self, state):
        """(m (P, K), r (P, K), Var η_k (P, K), then Var Σ_k η_k (P,) under Böhning's bound and
        Cov η (P, K, K) under `ncvmp`, else None) under the block's q."""
        key = self.version_key(state, (self.block_key,))
        if self._joint_key != key:
            sol = state.moments(self.block_key)
            offset = np.stack([np.broadcast_to(margin(state, rest)[0], self.builder.shape()).reshape(-1)
                               for rest in self.rests], -1)
            mean = np.stack([rows.mean(sol) for rows in self.rows], -1) + offset
            cov = spread = None
            if self.rule == "ncvmp":  # the classes' covariance; the variances are its diagonal
                cov = np.empty(mean.shape + (self.classes,))
                for k, rows in enumerate(self.rows):
                    for j in range(k + 1):
                        cov[:, k, j] = cov[:, j, k] = rows.covariance(self.rows[j], sol)
                var = np.diagonal(cov, axis1=1, axis2=2)
            else:  # Böhning's term reads the classes' variances and that of their sum
                var, spread = np.stack([rows.variance(sol) for rows in self.rows], -1), self.total.variance(sol)
            self._joint_key, self._averages = key, None
            self._joint = (mean, offset, var, spread, cov)
        return self._joint

    def averages(self, state):
        """(E[lse], E[p], E[diag p − ppᵀ]) under the joint q(η_n) (`ncvmp`), once per change of q."""
        mean, _, _, _, cov = self.joint(state)
        if self._averages is None:
            self._averages = joint_averages(mean, cov)
        return self._averages

    def _margin(self, state):
        """(m, Var η_k), (P, K): the widest margin at the start (ppl.infer.initialise)."""
        mean, _, var, _, _ = self.joint(state)
        return mean, var

    def message(self, state, name, factored=False):
        if name != self.block_key:
            return super().message(state, name, factored)
        mean, offset, _, _, _ = self.joint(state)
        k = self.classes
        onehot = softmax.onehot(self.y.reshape(-1), k)
        if self.rule == "ncvmp":
            _, p, curvature = self.averages(state)
        else:
            p = special.softmax(mean, axis=-1)
            curvature = np.broadcast_to(0.5 * (np.eye(k) - 1.0 / k), (len(mean), k, k))
        pull = onehot - p + np.einsum("pkl,pl->pk", curvature, mean - offset)
        count = self.count(self.block_key)
        if count is not None:
            weight = np.broadcast_to(count, self.builder.shape()).reshape(-1)
            pull, curvature = pull * weight[:, None], curvature * weight[:, None, None]
        return self._assemble(curvature, pull)

    def _assemble(self, curvature, pull) -> np.ndarray:
        """The block's natural message Σ_n C_nᵀ Λ_n C_n (J) and Σ_n C_nᵀ b_n (h), into the arrow's
        blocks: the corner's by K products, the groups' by one sparse sum per block kind."""
        layout, by_group = self.total.layout, self.total.by_group
        g, l, c = layout.groups, layout.local, layout.corner
        elements = len(pull)
        h_c, h_l, a = np.zeros(c), np.zeros((elements, l)), np.zeros((c, c))
        d, b = np.zeros((elements, l, l)), np.zeros((elements, l, c))
        for k, rows in enumerate(self.rows):
            pulled_c = sum(curvature[:, k, j, None] * other.cg for j, other in enumerate(self.rows))  # (Λ C)_k
            h_c += rows.cg.T @ pull[:, k]
            a += rows.cg.T @ pulled_c
            if l:
                pulled_l = sum(curvature[:, k, j, None] * other.cl for j, other in enumerate(self.rows))
                h_l += rows.cl * pull[:, k, None]
                d += rows.cl[:, :, None] * pulled_l[:, None, :]
                b += rows.cl[:, :, None] * pulled_c[:, None, :]
        h_l = (by_group @ h_l)[:g]
        d = (by_group @ d.reshape(elements, l * l))[:g].reshape(g, l, l)
        b = (by_group @ b.reshape(elements, l * c))[:g].reshape(g, l, c)
        return layout.pack(h_c, h_l, a, d, b)[None, :]

    def _expected_log(self, state):
        mean, _, var, spread, _ = self.joint(state)
        k = self.classes
        y = self.y.reshape(-1)
        if self.rule == "ncvmp":
            term = mean[np.arange(len(y)), y] - self.averages(state)[0]
        else:
            term = mean[np.arange(len(y)), y] - special.logsumexp(mean, axis=-1) - 0.25 * var.sum(-1) \
                + spread / (4 * k)
        return term.reshape(self.builder.shape())
