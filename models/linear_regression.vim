# Bayesian linear regression with unknown noise precision.
#
#   w[d] ~ Normal(0, 1)                       d = 1..D, prior precision 1 on each weight
#   tau ~ Gamma(1, 1)                         noise precision, shape 1, rate 1
#   y[n] | w, tau ~ Normal(dot(x[n], w), tau) written vectorised as Normal(X @ w, tau)
#
# Data (linear_regression.csv, synthetic): N = 50 rows, D = 3 standard-normal features
# x1..x3 (no intercept), y = X (1.5, -2, 0.5) + noise of sd 0.5 (precision 4).
# The variants linear_regression_ard.vim and linear_regression_known_noise.vim have identical
# copies of this file.
#
# Inference: all vmp. The mean X @ w is linear in the Gaussian w (Normal–Normal), the
# precision is the Gamma tau itself (Normal–Gamma). w and tau are global.
data X: real[N, D] from x1..xD
data y: real[N]

w: real[D] ~ Normal(0, 1)
tau ~ Gamma(1, 1)
y ~ Normal(X @ w, tau)
