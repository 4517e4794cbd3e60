"""Independent references for Gaussian q: expectations by this module's own Gauss–Hermite rule
and by adaptive quadrature,
and the optimum of Σ_n E_q[f_n(x_n·w)] − KL(q ‖ N(0, I)) over q(w) = N(m, LLᵀ) by L-BFGS.

Any rule whose site comes from (term, g1, g2) with g1 = ∂term/∂m and g2 = 2 ∂term/∂v has its
fixed point here: NC-VMP (the exact ELBO), the bounds (their bound), delta VI (its expansion).
"""

import numpy as np
from scipy import integrate, optimize

GH_NODES, GH_WEIGHTS = np.polynomial.hermite.hermgauss(60)


def gh_expect(fn, m, v):
    """E[fn(η)] under N(m, v) by 60-node Gauss–Hermite (this file's own quadrature)."""
    eta = np.asarray(m)[..., None] + np.sqrt(2.0 * np.asarray(v))[..., None] * GH_NODES
    return np.sum(GH_WEIGHTS / np.sqrt(np.pi) * fn(eta), axis=-1)


def adaptive_expectation(fn, m, v):
    """E[fn(η)] under N(m, v) by adaptive quadrature in z = (η − m)/√v, split where η = 0."""
    sd = np.sqrt(v)

    def integrand(z):
        return fn(m + sd * z) * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
    kink = -m / sd
    points = [kink] if -40 < kink < 40 else None
    value, _ = integrate.quad(integrand, -40, 40, points=points, epsabs=1e-14, epsrel=1e-13, limit=400)
    return value


def gaussian_elbo_optimum(x, terms):
    """max over q(w) = N(m, L Lᵀ) of Σ_n E_q[log f_n(x_n·w)] − KL(q ‖ N(0, I)), by L-BFGS-B.

    Parameters: m, log diag L and the strictly lower triangle of L. With m_n = x_n·m and
    v_n = |Lᵀx_n|²: ∂/∂m = Xᵀg1 − m, ∂/∂L = Xᵀ diag(g2) X L − (L − L⁻ᵀ)."""
    n, d = x.shape
    lower = np.tril_indices(d, -1)

    def unpack(theta):
        m, logdiag = theta[:d], theta[d:2 * d]
        chol = np.zeros((d, d))
        chol[lower] = theta[2 * d:]
        chol[np.diag_indices(d)] = np.exp(logdiag)
        return m, logdiag, chol

    def negative_elbo(theta):
        m, logdiag, chol = unpack(theta)
        margin_m = x @ m
        margin_v = np.sum((x @ chol) ** 2, axis=1)
        expected, g1, g2 = terms(margin_m, margin_v)
        kl = 0.5 * (np.sum(chol ** 2) + m @ m - d) - np.sum(logdiag)
        grad_m = x.T @ g1 - m
        grad_chol = (x.T * g2) @ x @ chol - (chol - np.linalg.inv(chol).T)
        grad = np.concatenate([grad_m, np.diag(grad_chol) * np.exp(logdiag), grad_chol[lower]])
        return -(np.sum(expected) - kl), -grad

    theta = np.concatenate([np.zeros(d), np.zeros(d), np.zeros(len(lower[0]))])
    for _ in range(3):  # restart from the optimum: L-BFGS's memory is rebuilt, the last digits settle
        result = optimize.minimize(negative_elbo, theta, jac=True, method="L-BFGS-B",
                                   options={"maxiter": 20000, "maxcor": 50, "ftol": 1e-16, "gtol": 1e-11})
        theta = result.x
    m, _, chol = unpack(theta)
    # (the Hessian in m is ≥ I, so a gradient below 1e-5 puts m within 1e-5 of the optimum)
    assert np.max(np.abs(result.jac)) < 1e-5, result.message
    return -result.fun, m, chol @ chol.T


def factorised_elbo_optimum(x, classes, terms):
    """max over q(W) = Π_k N(m_k, L_k L_kᵀ) of Σ_n E_q[log f_n(η_n)] − Σ_k KL(q_k ‖ N(0, I)), with
    η_nk = x_n·w_k, by L-BFGS-B. `terms(M, V)` → (E[log f] (N,), ∂/∂M (N, K), 2 ∂/∂V (N, K)) at the
    margins' means M and variances V: the per-class version of `gaussian_elbo_optimum`."""
    n, d = x.shape
    lower = np.tril_indices(d, -1)
    size = 2 * d + len(lower[0])

    def unpack(theta):
        blocks = theta.reshape(classes, size)
        chols = np.zeros((classes, d, d))
        chols[:, lower[0], lower[1]] = blocks[:, 2 * d:]
        chols[:, np.arange(d), np.arange(d)] = np.exp(blocks[:, d:2 * d])
        return blocks[:, :d], blocks[:, d:2 * d], chols

    def negative_elbo(theta):
        means, logdiags, chols = unpack(theta)
        margin_m = x @ means.T
        margin_v = np.stack([np.sum((x @ c) ** 2, axis=1) for c in chols], -1)
        expected, g1, g2 = terms(margin_m, margin_v)
        value, grads = np.sum(expected), []
        for k in range(classes):
            m, chol = means[k], chols[k]
            value -= 0.5 * (np.sum(chol ** 2) + m @ m - d) - np.sum(logdiags[k])
            grad_chol = (x.T * g2[:, k]) @ x @ chol - (chol - np.linalg.inv(chol).T)
            grads.append(np.concatenate([x.T @ g1[:, k] - m, np.diag(grad_chol) * np.exp(logdiags[k]),
                                         grad_chol[lower]]))
        return -value, -np.concatenate(grads)

    theta = np.zeros(classes * size)
    for _ in range(3):
        result = optimize.minimize(negative_elbo, theta, jac=True, method="L-BFGS-B",
                                   options={"maxiter": 20000, "maxcor": 50, "ftol": 1e-16, "gtol": 1e-11})
        theta = result.x
    means, _, chols = unpack(theta)
    assert np.max(np.abs(result.jac)) < 1e-5, result.message
    return -result.fun, means, np.einsum("kij,klj->kil", chols, chols)


def assert_at_optimum(post, best, mean, cov, elbo_abs, atol, name="w"):
    """The run `post` reached the optimum (best, mean, cov): its ELBO, and q(name)'s mean and
    covariance, within the tolerances."""
    m, v = post[name].family.mean_cov(post[name].natural)
    assert abs(post.elbo - best) <= elbo_abs, (post.elbo, best)
    np.testing.assert_allclose(m, mean, rtol=0, atol=atol)
    np.testing.assert_allclose(v, cov, rtol=0, atol=atol)
