# Gaussian-process classification with a logistic likelihood.
#
#   f ~ MvNormal(zeros(N), cov=rbf(x, lengthscale, variance))
#         k(x, x') = variance * exp(-(x - x')^2 / (2 lengthscale^2))
#   y[n] | f ~ Bernoulli(logistic(f[n]))       n = 1..N
#
# lengthscale = 1 and variance = 1 are fixed (override with --set).
#
# Data (gp_classification.csv, synthetic): N = 40 inputs x uniform on [-3, 3] (sorted) and
# labels y ~ Bernoulli(logistic(2 sin(1.5 x))) (numpy default_rng(5)).
#
# Inference: f's prior edge is vmp; each likelihood edge y[n] → f is ncvmp (logistic link of
# the Gaussian f; the expectations are one-dimensional, in f[n]'s marginal).
const lengthscale = 1.0
const variance = 1.0

data x: real[N]
data y: bool[N]

f ~ MvNormal(zeros(N), cov=rbf(x, lengthscale, variance))
for n in 1..N {
  y[n] ~ Bernoulli(logistic(f[n]))
}
