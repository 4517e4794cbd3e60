# Bayesian linear regression with unknown noise precision.
#
#   alpha ~ Gamma(1, 1)                       prior precision of the weights
#   w ~ MvNormal(0, alpha I)                  D weights with one joint Gaussian q(w)
#   tau ~ Gamma(1, 1)                         noise precision, shape 1, rate 1
#   y[n] | w, tau ~ Normal(dot(x[n], w), tau) written vectorised as Normal(X @ w, tau)
#
# Data (linear_regression.csv, synthetic): N = 50 rows, D = 3 standard-normal features
# x1..x3 (no intercept), y = X (1.5, -2, 0.5) + noise of sd 0.5 (precision 4).
# The variants linear_regression_ard.vim and linear_regression_known_noise.vim have identical
# copies of this file.
#
# Inference: all vmp. The mean X @ w is linear in the Gaussian w (Normal–Normal), the
# precision is the Gamma tau itself (Normal–Gamma), and w's prior precision is alpha times a
# fixed matrix (MvNormal–Gamma). q(w) q(alpha) q(tau) is the mean-field VB fixed point; w, alpha
# and tau are global. (With `w: real[D] ~ Normal(...)` the coordinates of w would be
# factorised apart, which the engine refuses for `X @ w`: their updates are coupled.)
data X: real[N, D] from x1..xD
data y: real[N]

alpha ~ Gamma(1, 1)
w ~ MvNormal(zeros(D), alpha * eye(D))
tau ~ Gamma(1, 1)
y ~ Normal(X @ w, tau)
