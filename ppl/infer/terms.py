"""The ELBO's pieces, E_q[log f] per factor and H[q] per variable, in one loop shared by
`Problem.elbo_terms` and a fused kernel that computes some of them itself (in blocks of rows,
ppl.infer.fused_mixture). A module of its own because the problem's builder imports the kernels."""

from __future__ import annotations


def elbo_terms(factors, latent, state, own=None) -> dict:
    """E[log p(factor)] for each factor runtime and H[q(v)] for each latent variable, in that order,
    taking a value from `own` (keyed by factor runtime or variable name) where a kernel gave one."""
    own = own or {}
    terms = {f"E[log p({f.name})]": own[f] if f in own else f.elbo(state) for f in factors}
    terms.update({f"H[q({v})]": own[v] if v in own else state.entropy(v) for v in latent})
    return terms
