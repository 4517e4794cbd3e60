"""Fused E-steps for a local block that is a Dirichlet–Categorical pair, LDA's
θ_d ~ Dirichlet(α), z_t ~ Categorical(θ_{d_t}), y_t ~ Categorical(β_{z_t}) with β global:

- `vmp`: the mean-field inner loop with z summed out of each sweep (Blei et al. 2003 in the
  form of every online LDA): with θ'_d = exp E[log θ_d] and b_t = exp E[log β_{·,y_t}],
  r_t = θ'_{d_t} ⊙ b_t / (θ'_{d_t}·b_t) and γ_d = α + Σ_{t∈d} c_t r_t. The same fixed point,
  sweep for sweep, as updating z then θ through the factors, without z's logarithms;
- `cvb0`: the zero-order collapsed update (Asuncion et al. 2009): θ integrated out, each
  token's r_t ∝ (n_{d_t} − c_t r_t + α) ⊙ b_t, all tokens at once from the last sweep's counts
  n_d = Σ_{t∈d} c_t r_t (the parallel form), then γ_d = α + n_d.

The block's factors give everything: b_t from the data factor's E[log p(y_t | β_k)], α from
θ's other messages, c_t from the row weights. The locals are written back to the state as
the factors would leave them (z's natural parameters, θ's), so the M-step and the ELBO read
them unchanged.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma


class DirichletCategorical:
    """The block (θ, z): `own` the factor z ~ Categorical(θ[d]), `data` the factor that z selects
    components of. Sums over a group's rows are one sparse product (groups × rows, the rows'
    weights as values), so no row is ever looped over."""

    def __init__(self, problem, theta: str, z: str, own, data):
        from scipy.sparse import csr_matrix
        self.theta, self.z, self.own, self.data = theta, z, own, data
        self.priors = [f for f in problem.neighbours[theta] if f is not own]  # θ's, not the problem: no cycle
        doc = own.reads[theta][0].index.reshape(-1)
        count = own.count(theta)
        weights = np.ones(len(doc)) if count is None else np.asarray(count, float).reshape(-1)
        groups = int(np.prod(problem.shapes[theta], dtype=np.int64))
        self.tokens = len(doc)
        self.token_pair, self.doc, self.code, weights = _pairs(doc, _codes(data), weights)
        self.weights = weights
        self.rows = csr_matrix((weights, (self.doc, np.arange(len(self.doc)))), shape=(groups, len(self.doc)))
        self.lengths = np.diff(self.rows.indptr)  # pairs per group: a group's pairs are contiguous
        # copies of each pair in the rows, when the rows come in pair order (`_to_rows`)
        ordered = self.token_pair is not None and np.all(self.token_pair[1:] >= self.token_pair[:-1])
        self.copies = np.bincount(self.token_pair, minlength=len(self.doc)) if ordered else None
        if self.code is not None:  # the words met, and the pairs' weights by word (`topic_counts`)
            self.words, self.word_of = np.unique(self.code, return_inverse=True)
            size = problem.families[self.topics].size
            self.by_code = csr_matrix((weights, (self.code, np.arange(len(self.code)))), shape=(size, len(self.code)))
        self.bound = None  # (state key, E_q[log p(y, z | θ, β)] + H[z]) after the last mean-field fit

    def fit(self, state, inner: int, tol: float, estep: str = "vmp", alpha=None, elog=None,
            write_z: bool = True) -> int:
        """At most `inner` sweeps, a group's stopping once the largest relative change of its
        E[log θ] is below `tol`; the last sweep updates z then θ of every group. Returns the
        sweeps taken. `alpha`, `elog`: θ's prior concentrations and starting E[log θ] when the
        caller knows them (the fused batch sweep), else read from the state. `write_z=False`
        keeps z's responsibilities in the block for `write_z` (the fused sweep: no reader
        of z's q before the run ends)."""
        theta = self.theta
        if alpha is None:
            prior = sum(f.message(state, theta) for f in self.priors)
            alpha = prior + 1.0
        b, shift = self._topic_weights(state)
        if estep == "cvb0":
            resp, sweeps = self._cvb0(alpha, b, state.moments(theta), inner, tol)
            self.bound = None  # CVB0's responsibilities are not mean-field optima: no closed form
        else:
            start = state.moments(theta) if elog is None else elog
            elog, sweeps = self._collapsed(alpha, b, start.copy(), inner - 1, tol)
            top = elog.max(axis=1, keepdims=True)
            resp = np.repeat(np.exp(elog - top), self.lengths, axis=0)  # block copies, no gather
            resp *= b
            total = np.einsum("tk->t", resp)  # resp.sum(axis=1): 5× the time over rows of K entries
            resp /= total[:, None]
            sweeps += 1
        counts = self.rows @ resp
        new = alpha - 1.0 + counts
        moments = None
        if estep != "cvb0":  # E_q[log p(y, z | θ, β)] + H[z] at the new θ (ppl.infer.schedule.fused_lda)
            moments = state.families[theta].to_mean(new)
            log_norm = np.log(total) + np.repeat(top[:, 0], self.lengths) + shift
            value = float(self.weights @ log_norm + np.sum(counts * (moments - elog)))
        self.resp = resp
        if write_z:
            self.write_z(state)
        state.set(theta, new, moments=moments)
        if estep != "cvb0":
            self.bound = (self._key(state), value)
        return sweeps

    def _key(self, state) -> tuple:
        return self.data.version_key(state, (self.theta, self.z, self.topics))

    @property
    def topics(self) -> str | None:
        """The global whose components z selects (LDA's β), when the rows' codes are known."""
        return self.data.params["probs"][1].name if self.code is not None else None

    def topic_counts(self, state) -> np.ndarray | None:
        """The data factor's message to the topics, Σ_t c_t r_t e_{y_t}ᵀ (topics × codes), as one
        sparse product over the pairs, while the state is as the last mean-field fit left it."""
        if self.local_bound(state) is None:
            return None
        return np.ascontiguousarray((self.by_code @ self.resp).T)

    def local_bound(self, state) -> float | None:
        """E_q[log p(y, z | θ, β)] + H[q(z)] summed over the block's rows, from the last fit's
        normalisers (Σ_t c_t log Σ_k exp(E log θ_{d_t k} + E log β_{k y_t}), corrected to the θ
        written after z), while the state is as that fit left it; else None."""
        if self.bound is None or self.code is None or self.bound[0] != self._key(state):
            return None
        return self.bound[1]

    def bound_at_q(self, state, counts) -> float:
        """E_q[log p(y, z | θ, β)] + H[q(z)] of the last fit's responsibilities r read at the
        state's current θ and β (SSMF: the locals fitted at a draw, the estimate at q(β)):
        Σ_dk n_dk E log θ_dk + Σ_kv C_kv E log β_kv − Σ_p c_p Σ_k r_pk log r_pk, with C the
        topic counts of that fit (`topic_counts`)."""
        read = self.data.params["probs"][1]
        elog_beta = state.moments(read.name)[read.components]
        theta = float(np.sum((self.rows @ self.resp) * state.moments(self.theta)))
        entropy = float(self.weights @ np.einsum("pk,pk->p", self.resp, np.maximum(self.log_resp, -1e300)))
        return theta + float(np.sum(counts * elog_beta)) - entropy

    def _topic_weights(self, state):
        """(b, shift): b_t = exp(E log β_{·,y_t} − shift_t) per row, shift_t the largest of the
        row's E log β (computed once per word when the codes are known)."""
        if self.code is None:
            log_b = raw = self.data.expected_log(state).reshape(self.tokens, -1)
            if self.token_pair is not None:  # the rows in group order
                log_b = np.empty_like(raw)
                log_b[self.token_pair] = raw
            shift = log_b.max(axis=1)
            return np.exp(log_b - shift[:, None]), shift
        read = self.data.params["probs"][1]
        elog_beta = state.moments(read.name)[read.components][:, self.words]
        top = elog_beta.max(axis=0)
        weights = np.exp(elog_beta - top).T
        return np.take(weights, self.word_of, axis=0), top[self.word_of]

    def write_z(self, state) -> None:
        """z's q per token from the last fit's responsibilities per (group, code) pair. The q it
        writes is the one the fit's bound was computed for, so a current bound stays current."""
        current = self.bound is not None and self.bound[0] == self._key(state)
        with np.errstate(divide="ignore"):  # a topic that a token cannot have: log 0
            log_resp = self.log_resp = np.log(self.resp)
        state.set(self.z, self._to_rows(log_resp), moments=self._to_rows(self.resp))
        if current:
            self.bound = (self._key(state), self.bound[1])

    def _to_rows(self, values):
        """Per-pair values for every row of z: block copies when the rows come in pair order (a
        pair's rows adjacent, the pairs in order: LDA's tokens listed by document and word; 1.5× the
        speed of a gather), else a gather."""
        if self.token_pair is None:
            return values
        if self.copies is not None:
            return np.repeat(values, self.copies, axis=0)
        return np.take(values, self.token_pair, axis=0)

    def _collapsed(self, alpha, b, elog, sweeps: int, tol: float):
        """`sweeps` mean-field sweeps with z summed out: γ_d = α + θ'_d ⊙ Σ_{t∈d} c_t b_t/(θ'_d·b_t),
        each group frozen from the sweep its own change falls below `tol` (so that a group's fit
        does not depend on the others in the block: a partition of a cluster run gives the same
        answer); the settled groups' rows leave the products once they are a tenth of them."""
        active = np.arange(len(elog))
        live = np.ones(len(active), bool)
        weights, lengths = self.rows.data, self.lengths
        rows, part = _segments(weights, lengths), b  # rows' values become c_t/(θ'·b_t) each sweep
        current, prior = elog[active], alpha  # E[log θ] and α of the active groups (E[log θ] into
        # `elog` at a drop and at the end)
        done = 0
        for done in range(1, sweeps + 1):
            theta = np.exp(current - current.max(axis=1, keepdims=True))
            spread = np.repeat(theta, lengths, axis=0)  # θ'_{d_t}: block copies, no gather
            np.divide(weights, np.einsum("tk,tk->t", spread, part), out=rows.data)
            gamma = prior + theta * (rows @ part)
            new = digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True))
            moving = live & (np.max(np.abs(new - current) / (1.0 + np.abs(current)), axis=1) >= tol)
            np.copyto(current, new, where=live[:, None])  # a settled group keeps its E[log θ] (in place: no copy)
            live, count = moving, np.count_nonzero(moving)
            if not count:
                break
            if count < 0.9 * len(active):  # drop the settled groups and their rows
                elog[active] = current
                keep = np.repeat(moving, lengths)  # by masks: a CSR row slice and a gather cost 3× more
                active, live, lengths = active[moving], live[moving], lengths[moving]
                current, prior = current[moving], prior[moving]
                weights, part = weights.compress(keep), part.compress(keep, axis=0)
                rows = _segments(weights, lengths)
        elog[active] = current
        return elog, done

    def _cvb0(self, alpha, b, elog, inner: int, tol: float):
        """A mean-field sweep from E[log θ], then CVB0 sweeps from the last sweep's counts."""
        weight = np.exp(elog - elog.max(axis=1, keepdims=True))[self.doc] * b
        sweeps = 1
        for sweeps in range(1, inner + 1):
            if sweeps > 1:
                weight = ((self.rows @ resp)[self.doc] - resp + alpha[self.doc]) * b  # one token out
            new = weight / weight.sum(axis=1, keepdims=True)
            if sweeps > 1 and np.max(np.abs(new - resp)) < tol:
                resp = new
                break
            resp = new
        return resp, sweeps


def _segments(weights, lengths):
    """The groups × rows sparse sum of consecutive runs of rows, `lengths` rows per group, with
    `weights` (copied) as its values; int32 indices where they fit, which scipy otherwise checks
    and converts (2.5× the cost of the build)."""
    from scipy.sparse import csr_matrix
    dtype = np.int32 if len(weights) < np.iinfo(np.int32).max else np.int64
    indptr = np.zeros(len(lengths) + 1, dtype)
    np.cumsum(lengths, out=indptr[1:])
    return csr_matrix((weights.copy(), np.arange(len(weights), dtype=dtype), indptr),
                      shape=(len(lengths), len(weights)))


def current_block(problem, state):
    """The fused block of `problem` whose last mean-field fit `state` still holds, or None: its
    normalisers and counts stand for the assignments' factors (SVI's estimate and M-step)."""
    return next((b for b in problem.blocks.values() if b is not None and b.local_bound(state) is not None), None)


def _codes(data):
    """The observed category of each row when the data factor reads its codes and the topics
    through one plate-free read (LDA's word[t] ~ Categorical(beta[z[t]])), else None."""
    codes, probs = getattr(data, "codes", None), getattr(data, "params", {}).get("probs")
    if codes is None or probs is None or probs[0] != "read" or not probs[1].plate_free:
        return None
    return np.asarray(codes).reshape(-1)


def _pairs(doc, codes, weights):
    """Rows that share a group and a code have the same responsibilities: (row → pair or None,
    pair's group, pair's code, pair's summed weight), the pairs sorted by group. Without codes
    each row is its own pair (`_by_group`)."""
    if codes is None or not len(doc):
        return _by_group(doc, weights)
    key = doc.astype(np.int64) * (int(codes.max()) + 1) + codes
    unique, inverse = np.unique(key, return_inverse=True)
    if len(unique) == len(key) and np.all(np.diff(key) > 0):
        return None, doc, codes, weights
    size = int(codes.max()) + 1
    return inverse.reshape(-1), unique // size, unique % size, np.bincount(inverse.reshape(-1), weights)


def _by_group(doc, weights):
    """Each row its own pair, in group order: (row → pair or None when already in order, ...)."""
    if np.all(doc[1:] >= doc[:-1]):
        return None, doc, None, weights
    order = np.argsort(doc, kind="stable")
    return np.argsort(order), doc[order], None, weights[order]


def dirichlet_categorical(problem, names) -> DirichletCategorical | None:
    """The fused block when `names` are a Dirichlet θ and a Categorical z whose only factors are
    z ~ Categorical(θ[d]) and one observed categorical whose components z selects from globals;
    None otherwise (the generic sweep then runs)."""
    key = tuple(names)
    if key not in problem.blocks:  # built once per bound problem: its pairs and sparse sums
        parts = _parts(problem, names)
        problem.blocks[key] = DirichletCategorical(problem, *parts) if parts is not None else None
    return problem.blocks[key]


INNER = 30  # E-step iterations at most of LDA's batch sweep (scikit-learn: 100, gensim: 50)
# LDA's svi where the schedule leaves them out, chosen on a validation split of the training
# documents (benchmarks/lda_tune.py; docs/rules/svi.md): τ = 10 and no N ramp (the ramp's
# small early steps cost 0.1–0.15 nats/word at 5–10 passes), random initial topics, and 5 passes
# (10 and 20 passes score within 0.003 nats/word of 5, less than the seeds' spread); rechecked over
# 30 paired seeds: κ = 0.8 loses 0.0125 ± 0.003, κ = 0.6 ties, scikit-learn's start, order and E-step
# stop change nothing (docs/rules/svi.md)
SVI_DEFAULTS = {"tau": 10.0, "kappa": 0.7, "ramp": False, "init": "random", "passes": 5}


def block_defaults(problem):
    """The schedule of `problem` with LDA's defaults where its local block is a Dirichlet–
    Categorical pair and the user left them out. Batch: topics drawn at random (`init=random`:
    the locals' random responsibilities average out over hundreds of tokens per topic, so the
    topics would start nearly uniform) and the locals refitted from the prior each sweep for at
    most `INNER` iterations (carried over and updated once, the sweep crawls and the documents
    keep too many topics: docs/tutorials/lda.md). `svi`: `SVI_DEFAULTS` for the options its text
    did not write. Other models, and SSMF, keep theirs."""
    from dataclasses import replace
    spec = problem.schedule
    if spec.name not in ("batch", "svi") or _parts(problem, problem.local) is None:
        return spec
    if spec.name == "svi":
        given = spec.given if spec.given is not None else set(SVI_DEFAULTS)  # built in code: as set
        return replace(spec, **{k: v for k, v in SVI_DEFAULTS.items() if k not in given})
    return replace(spec, init=spec.init or "random", inner=spec.inner or INNER)


def _parts(problem, names):
    """(θ, z, z's own factor, the data factor) of a Dirichlet–Categorical block, or None."""
    if len(names) != 2:
        return None
    families = {getattr(problem.families.get(n), "name", None): n for n in names}  # a @joint key has none
    theta, z = families.get("Dirichlet"), families.get("Categorical")
    if theta is None or z is None or z in problem.dataset.arrays or theta in problem.dataset.arrays:
        return None
    own = [f for f in problem.neighbours[z] if f.target.name == z]
    data = [f for f in problem.neighbours[z] if f.target.name != z]
    if len(own) != 1 or len(data) != 1 or len(problem.neighbours[z]) != 2:
        return None
    own, data = own[0], data[0]
    if set(own.reads) != {z, theta} or len(own.reads[theta]) != 1 or own.selector is not None or \
            own.reads[theta][0].index.size != own.target.index.size:
        return None
    if data.selector is None or data.selector.name != z or len(data.reads[z]) != 1 or \
            data.factor.target.name not in problem.model.data or set(data.reads) & set(names) != {z} or \
            data.factor.dist.name != "Categorical":
        return None
    return theta, z, own, data
