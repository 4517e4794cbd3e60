# Bayesian linear regression with automatic relevance determination (ARD).
#
#   alpha[d] ~ Gamma(a0, b0)                  one prior precision per weight, d = 1..D
#   w | alpha ~ MvNormal(0, diag(alpha))      a weight whose alpha grows large is pruned
#   tau ~ Gamma(1, 1)                         noise precision
#   y[n] | w, tau ~ Normal(dot(x[n], w), tau)
#
# Data (linear_regression_ard.csv, synthetic): an identical copy of linear_regression.csv,
# N = 50 rows, D = 3 feature columns x1..x3, y (see that model).
# a0 = b0 = 0.001 make the prior on each alpha[d] broad (Tipping's relevance vector setup).
#
# Inference: all vmp. w's prior reads alpha through its precision diag(alpha) (MvNormal–Gamma); the
# likelihood is linear in w (Normal–Normal) with the Gamma tau as precision (Normal–Gamma).
const a0 = 0.001
const b0 = 0.001

data X: real[N, D] from x1..xD
data y: real[N]

alpha: real[D] ~ Gamma(a0, b0)
w ~ MvNormal(zeros(D), diag(alpha))
tau ~ Gamma(1, 1)
y ~ Normal(X @ w, tau)
