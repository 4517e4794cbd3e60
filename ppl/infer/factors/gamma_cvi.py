"""`y ~ Gamma(z, r)` with a latent Gamma `z` as the shape: CVI for a q that is not Gaussian
(Khan & Lin, App. E.3 and App. F).

q(z) = Ga(α, β) with t(z) = (log z, z), λ = (α − 1, −β), μ = (ψ(α) − log β, α/β). (The paper's
E.3 swaps the two mean parameters; tests/test_gamma_cvi.py shows what the swap does.) The
message to z is the mean-parameter gradient

    ∇_μ E_q[log f] = C_λ⁻¹ ∇_λ E_q[log f],   C_λ = ∇²A(λ) = [[ψ'(α), 1/β], [1/β, α/β²]]   (eq 15)

and the engine adds the prior's conjugate message and takes the damped step, halving it for
any element it would move out of α > 0, β > 0 (`shrink_until_valid`).

Each likelihood splits as log f(y | z) = η(y)·t(z) + c(y) + r(z): the part linear in t is
conjugate, so its mean gradient is η exactly; only the remainder r, smooth at z = 0, is
integrated — by the Gauss rule for Ga(α, 1) (z = x/β) with ∇_λ from the rule's own derivatives
(samples = 0, NC-VMP), or by `samples` draws (`monte_carlo_gradient`). The split matters: a
Gauss rule for x^(α−1) e^(−x) integrates log z badly when α is small (off by 0.02 at α = 1 with
32 nodes), while E[log z] itself is ψ(α) − log β. The ELBO term is always the quadrature one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.special import digamma, gammaln, polygamma

from ppl.infer.access import Unsupported
from ppl.infer.factors.base import FactorRuntime
from ppl.lang import ast

NODES = 32  # Gauss rule for Ga(α, 1): exact for polynomials in z of degree 63
DEFAULT_SAMPLES = 16
MAX_HALVINGS = 60


@dataclass(frozen=True)
class Likelihood:
    """log f(y | z, s) = η(y, s)·(log z, z) + c(y, s) + r(z, y, s) for a latent z in `role` and
    data s in the role `other`; `rest` gives r and dr/dz, vectorised."""

    role: str
    other: str
    linear: Callable  # (y, s) -> (η (..., 2), c)
    rest: Callable  # (z, y, s) -> (r, dr/dz)


def _gamma_shape_linear(y, rate):
    """Ga(y | z, s) = s^z y^(z−1) e^(−sy) / Γ(z), and −log Γ(z) = log z − log Γ(z + 1)."""
    log_sy = np.log(rate * y)
    return np.stack([np.ones_like(log_sy), log_sy], axis=-1), -np.log(y) - rate * y


def _gamma_shape_rest(z, y, rate):
    return -gammaln(z + 1.0), -digamma(z + 1.0)


LIKELIHOODS = {
    ("Gamma", "shape"): Likelihood("shape", "rate", _gamma_shape_linear, _gamma_shape_rest),
}


def gamma_role(factor, model) -> str | None:
    """The role of `LIKELIHOODS` in which `factor` reads a latent Gamma variable, if any."""
    for dist, role in LIKELIHOODS:
        expr = factor.args.get(role) if factor.dist.name == dist else None
        if expr is not None and _reads_latent(expr, model, "Gamma"):
            return role
    return None


def _reads_latent(expr, model, dist: str | None = None) -> bool:
    """Whether `expr` reads a latent variable (drawn from `dist`, when given)."""
    return any(isinstance(n, ast.Name) and model.variables.get(n.id) is not None
               and model.variables[n.id].kind == "latent" and dist in (None, model.variables[n.id].dist)
               for n in ast.walk(expr))


# ---- the Gamma q: its Gauss rule, mean parameters and Fisher solve

def gauss_gamma(alpha, n: int = NODES):
    """The n-point Gauss rule for Ga(α, 1), batched over α: nodes x and probability weights w
    (Golub–Welsch on the generalised-Laguerre Jacobi matrix), and their derivatives in α.

    scipy's `roots_genlaguerre` takes one α at a time and its weights sum to Γ(α), which
    overflows beyond α ≈ 171; here the weights are the squared first components of the
    eigenvectors, which sum to one. With J' = dJ/dα, first-order perturbation gives
    dx_i/dα = v_iᵀ J' v_i and dv_i/dα = Σ_{j≠i} v_j (v_jᵀ J' v_i) / (x_i − x_j).
    """
    a = np.asarray(alpha, dtype=float)[..., None]
    i, k = np.arange(n), np.arange(1, n)
    off = np.sqrt(k * (k + a - 1.0))
    jacobi = np.zeros(a.shape[:-1] + (n, n))
    jacobi[..., i, i] = 2.0 * i + a
    jacobi[..., k - 1, k] = off
    jacobi[..., k, k - 1] = off
    x, v = np.linalg.eigh(jacobi)
    d_off = k / (2.0 * off)
    # M = Vᵀ J' V, where J' is the identity plus d_off on the two off-diagonals
    upper = np.swapaxes(v[..., :-1, :], -1, -2) @ (v[..., 1:, :] * d_off[..., None])
    m = np.eye(n) + upper + np.swapaxes(upper, -1, -2)
    gaps = x[..., :, None] - x[..., None, :]  # x_i − x_j
    np.einsum("...ii->...i", gaps)[...] = np.inf
    first = v[..., 0, :]
    d_first = np.einsum("...j,...ji,...ij->...i", first, m, 1.0 / gaps)
    return x, first ** 2, np.einsum("...ii->...i", m), 2.0 * first * d_first


def fisher_solve(alpha, beta, grad) -> np.ndarray:
    """C_λ⁻¹ g: the mean-parameter gradient from the natural-parameter gradient g (eq 15).
    det C_λ = (αψ'(α) − 1)/β² > 0, so the 2×2 inverse is written out."""
    alpha, beta = np.asarray(alpha)[..., None], np.asarray(beta)[..., None]
    trigamma = polygamma(1, alpha)
    det = alpha * trigamma - 1.0
    g1, g2 = grad[..., :1], grad[..., 1:]
    return np.concatenate([(alpha * g1 - beta * g2) / det,
                           beta * (beta * trigamma * g2 - g1) / det], axis=-1)


def quadrature(rest, beta, rule):
    """(E[r], ∇_λ E[r]) under Ga(α, β), with `rule` = gauss_gamma(α) (points on the last axis);
    `rest(z)` returns (r, dr/dz). ∂/∂λ₁ = ∂/∂α (nodes and weights move with α) and
    ∂/∂λ₂ = −∂/∂β = E[r'(z) z]/β (z = x/β)."""
    beta = np.asarray(beta, dtype=float)[..., None]
    x, w, dx, dw = rule
    z = x / beta
    r, dr = rest(z)
    d_alpha = np.sum(dw * r + w * dr * dx / beta, axis=-1)
    d_rate = np.sum(w * dr * z, axis=-1) / beta[..., 0]
    return np.sum(w * r, axis=-1), np.stack([d_alpha, d_rate], axis=-1)


def monte_carlo_gradient(rest, draws) -> np.ndarray:
    """∇_μ E[r] from draws z_s ~ Ga(α, β) (last axis, S ≥ 3): Khan & Lin's App. F with both
    C_λ = Cov(t, t) and ∇_λ E[r] = Cov(r, t) (the score-function identity) estimated from the
    same draws, i.e. the least-squares slope of r_s on t(z_s). Under a concentrated q, log z and
    z are nearly collinear: dividing the noisy Cov(r, t) by the exact C_λ instead multiplies the
    noise by hundreds (sd 1000 against 3 for the toy model's N = 50, S = 64), while the shared
    draws cancel it; the price is a bias of order 1/S (E[z] ends 0.03% high there)."""
    r = rest(draws)[0]
    t = np.stack([np.log(draws), draws], axis=-1)
    t = t - t.mean(axis=-2, keepdims=True)
    r = r - r.mean(axis=-1, keepdims=True)
    c11, c12, c22 = (np.sum(t[..., i] * t[..., j], axis=-1) for i, j in ((0, 0), (0, 1), (1, 1)))
    g1, g2 = np.sum(r * t[..., 0], axis=-1), np.sum(r * t[..., 1], axis=-1)
    det = c11 * c22 - c12 * c12
    return np.stack([c22 * g1 - c12 * g2, c11 * g2 - c12 * g1], axis=-1) / det[..., None]


def shrink_until_valid(family, current: np.ndarray, total: np.ndarray, step: float, name: str = "λ",
                       senders=None) -> np.ndarray:
    """(1 − ρ)λ + ρ·total, with ρ halved for every element (row) the step would move out of
    the parameter space — the CVI paper's step shrinking; the current λ is valid, so some
    ρ > 0 is (the space is open and convex), and ρ = 0 keeps λ after MAX_HALVINGS. No step
    toward NaN is valid: keeping λ would look like a fixed point, so a NaN `total` is a
    breakdown of q(`name`), with `senders()` (the factors that sent NaN) in its detail."""
    if np.isnan(total).any():
        from ppl.infer.state import NumericalBreakdown
        raise NumericalBreakdown(name, "a message to it is NaN" + (f" ({senders()})" if senders else ""))
    rho = np.full(current.shape[:-1] + (1,), float(step))
    new = total if step == 1.0 else current + rho * (total - current)  # the full step: the messages' sum itself
    for _ in range(MAX_HALVINGS):
        bad = ~family.valid(new)
        if not bad.any():
            return new
        rho[bad] /= 2
        new = current + rho * (total - current)
    return np.where(family.valid(new)[..., None], new, current)


# ---- the runtime

class GammaCVIFactor(FactorRuntime):
    """A likelihood of observed data whose parameter in `Likelihood.role` is a latent Gamma."""

    rule = "cvi"

    def __init__(self, factor, model, env, dataset, families, options: dict):
        super().__init__(factor, model, env, dataset)
        self.likelihood = LIKELIHOODS[(factor.dist.name, gamma_role(factor, model))]
        self.samples = int(options.get("samples", DEFAULT_SAMPLES))
        if self.samples in (1, 2):
            raise Unsupported(f"`{self.name}`: samples must be 0 (exact) or at least 3", factor.span)
        if {"form", "minibatch"} & set(options):
            raise Unsupported(f"`{self.name}`: the site form with minibatches (`form`, `minibatch`) is not "
                              "available in this version", factor.span)
        expr = self.args[self.likelihood.role]
        if not isinstance(expr, (ast.Name, ast.Index)):
            raise Unsupported(f"`{self.name}`: cvi needs the Gamma variable itself as the {self.likelihood.role} "
                              f"of {factor.dist.name}, not `{ast.text(expr)}`", expr.span)
        other = self.args[self.likelihood.other]
        if _reads_latent(other, model):
            raise Unsupported(f"`{self.name}`: cvi for a latent {self.likelihood.role} needs the "
                              f"{self.likelihood.other} to be data or a constant", other.span)
        self.latent = self.add_read(self.builder.build(expr))
        if factor.target.name in self.reads:
            raise Unsupported(f"`{factor.target.name}` must be observed in `{self.name}`", factor.span)
        values = np.asarray(dataset.arrays[factor.target.name], dtype=float).reshape(-1, 1)
        self.y = self.target.gather(values)[..., 0]  # plate + (1,)
        self.s = self.data(other)
        self.eta, self.const = self.likelihood.linear(self.y, self.s)

    def _rest(self, z):
        """r(z) at nodes or draws z of shape plate + (C, points)."""
        return self.likelihood.rest(z, self.y[..., None], np.asarray(self.s)[..., None])

    def _q(self, state):
        """(α, β) of q(z) at every read: plate + (C,) each."""
        params = state.families[self.latent.name].params(self.latent.gather(state.natural[self.latent.name]))
        return params["shape"], params["rate"]

    def exact(self, state):
        """(E[r], ∇_λ E[r]) by quadrature, computed once per version of q(z)."""
        key = self.version_key(state, [self.latent.name])
        if getattr(self, "_exact_key", None) != key:
            name = self.latent.name
            shape = state.families[name].params(state.natural[name])["shape"]
            rule = [self.latent.gather(a) for a in gauss_gamma(shape)]  # one eigen-solve per element of z
            self._exact_key, self._exact = key, quadrature(self._rest, self._q(state)[1], rule)
        return self._exact

    def mean_gradient(self, state) -> np.ndarray:
        """∇_μ E_q[r] per element: the Fisher solve of the quadrature gradient, or the Monte Carlo
        estimate from `samples` draws per element of z."""
        if self.samples == 0:
            return fisher_solve(*self._q(state), self.exact(state)[1])
        family = state.families[self.latent.name]
        draws = family.sample(state.natural[self.latent.name], state.rng, self.samples)  # (S, size)
        return monte_carlo_gradient(self._rest, self.latent.gather(draws.T))

    def _message(self, state, access):
        return self.eta + self.mean_gradient(state)

    def _expected_log(self, state):
        mu = self.latent.read(state)
        value = np.sum(self.eta * mu, axis=-1) + self.const + self.exact(state)[0]
        return np.broadcast_to(value, self.builder.shape())

