# Univariate Gaussian with unknown mean and precision, Normal–Gamma prior.
#
#   tau ~ Gamma(a0, b0)                       shape a0, rate b0: E[tau] = a0 / b0
#   mu | tau ~ Normal(mu0, kappa0 * tau)      the prior precision of mu is kappa0 times tau
#   y[n] | mu, tau ~ Normal(mu, tau)          n = 1..N, Normal(mean, precision)
#
# Data (gaussian.csv, synthetic): N = 10 draws from N(0.5, 1), numpy's
# default_rng(0).normal(0.5, 1, 10). Constants mu0 = 0, kappa0 = a0 = b0 = 1.
#
# Inference: every edge is conjugate, so ppl check tags every edge vmp. The prior of mu
# reads tau through a scaled precision (Normal–Gamma); the likelihood y has mu as its mean
# (Normal–Normal) and tau as its precision (Normal–Gamma). Both latents are global.
const mu0 = 0
const kappa0 = 1
const a0 = 1
const b0 = 1

data y: real[N]

tau ~ Gamma(a0, b0)
mu ~ Normal(mu0, kappa0 * tau)
y ~ Normal(mu, tau)
