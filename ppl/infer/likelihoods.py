"""Scalar likelihoods f(y | link(η)) and their expectations under a Gaussian margin η ~ N(m, v).

The non-conjugate rules need E[log f], g1 = E[∂ log f/∂η] and g2 = E[∂² log f/∂η²]:

- `quadrature`: Gauss–Hermite with 48 nodes, exact to round-off for these smooth integrands
  (NC-VMP, Knowles & Minka; also the exact ELBO term, since every margin is one-dimensional);
- `monte_carlo`: the same derivatives averaged at η = m + √v ε, ε ~ N(0, 1) — the
  reparameterisation estimates of CVI (Khan & Lin, eqs. 29–31 with Bonnet's and Price's
  theorems);
- Poisson with the log link has them in closed form: E[e^η] = exp(m + v/2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.special import expit, gammaln, log_expit, log_ndtr

NODES, WEIGHTS = np.polynomial.hermite.hermgauss(48)


@dataclass(frozen=True)
class Likelihood:
    """log f(y, n, η) and its first two derivatives in η, vectorised (n: trials, or 1)."""

    name: str
    log_f: Callable
    d1: Callable
    d2: Callable
    closed_form: Callable | None = None  # (y, n, m, v) -> (E log f, g1, g2)


def _bernoulli_logistic():
    return Likelihood(
        "Bernoulli–logistic",
        lambda y, n, eta: y * eta + n * log_expit(-eta),
        lambda y, n, eta: y - n * expit(eta),
        lambda y, n, eta: -n * expit(eta) * expit(-eta))


def _probit_ratio(z):
    """φ(z)/Φ(z), stable for very negative z."""
    return np.exp(-0.5 * z * z - 0.5 * np.log(2 * np.pi) - log_ndtr(z))


def _bernoulli_probit():
    def log_f(y, n, eta):
        s = 2 * y - 1
        return log_ndtr(s * eta)

    def d1(y, n, eta):
        s = 2 * y - 1
        return s * _probit_ratio(s * eta)

    def d2(y, n, eta):
        s = 2 * y - 1
        r = _probit_ratio(s * eta)
        return -r * (s * eta + r)

    return Likelihood("Bernoulli–probit", log_f, d1, d2)


def _poisson_log():
    def closed(y, n, m, v):
        mean = np.exp(m + 0.5 * v)
        return y * m - mean - gammaln(y + 1), y - mean, -mean

    return Likelihood(
        "Poisson–exp",
        lambda y, n, eta: y * eta - np.exp(eta) - gammaln(y + 1),
        lambda y, n, eta: y - np.exp(eta),
        lambda y, n, eta: -np.exp(eta),
        closed)


def _binomial_logistic():
    base = _bernoulli_logistic()
    return Likelihood(
        "Binomial–logistic",
        lambda y, n, eta: base.log_f(y, n, eta) + gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1),
        base.d1, base.d2)


def gaussian(tau) -> Likelihood:
    """N(y | η, 1/τ) with a known precision: a conjugate factor put through the same rules."""
    return Likelihood(
        "Normal",
        lambda y, n, eta: 0.5 * np.log(tau / (2 * np.pi))[..., None] - 0.5 * tau[..., None] * (y - eta) ** 2
        if np.ndim(eta) > np.ndim(tau) else 0.5 * np.log(tau / (2 * np.pi)) - 0.5 * tau * (y - eta) ** 2,
        lambda y, n, eta: _trail(tau, eta) * (y - eta),
        lambda y, n, eta: -_trail(tau, eta) + 0 * eta,
        lambda y, n, m, v: (0.5 * np.log(tau / (2 * np.pi)) - 0.5 * tau * ((y - m) ** 2 + v),
                            tau * (y - m), -tau + 0 * m))


def _trail(tau, eta):
    tau = np.asarray(tau)
    return tau[..., None] if np.ndim(eta) > tau.ndim else tau


LIKELIHOODS = {
    ("Bernoulli", "logistic"): _bernoulli_logistic(),
    ("Bernoulli", "probit"): _bernoulli_probit(),
    ("Binomial", "logistic"): _binomial_logistic(),
    ("Poisson", "exp"): _poisson_log(),
}


def quadrature(lik: Likelihood, y, n, m, v):
    """(E[log f], g1, g2) under N(m, v) by Gauss–Hermite (closed form where there is one)."""
    if lik.closed_form is not None:
        return lik.closed_form(y, n, m, v)
    eta = m[..., None] + np.sqrt(2.0 * v)[..., None] * NODES
    y_, n_ = np.asarray(y)[..., None], np.asarray(n)[..., None]
    w = WEIGHTS / np.sqrt(np.pi)
    return (np.sum(w * lik.log_f(y_, n_, eta), -1), np.sum(w * lik.d1(y_, n_, eta), -1),
            np.sum(w * lik.d2(y_, n_, eta), -1))


def monte_carlo(lik: Likelihood, y, n, m, v, rng: np.random.Generator, samples: int):
    """(g1, g2) estimated from `samples` reparameterised draws η = m + √v ε per element."""
    eps = rng.standard_normal(np.shape(m) + (samples,))
    eta = m[..., None] + np.sqrt(v)[..., None] * eps
    y_, n_ = np.asarray(y)[..., None], np.asarray(n)[..., None]
    return np.mean(lik.d1(y_, n_, eta), -1), np.mean(lik.d2(y_, n_, eta), -1)
