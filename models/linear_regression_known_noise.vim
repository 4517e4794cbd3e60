# Bayesian linear regression with a known noise precision.
#
#   w ~ MvNormal(0, I)                        D weights, one joint Gaussian q(w)
#   y[n] | w ~ Normal(dot(x[n], w), tau)      tau fixed (the data were made with tau = 4,
#                                             i.e. noise sd 0.5); override with --set tau=...
#
# Data (linear_regression_known_noise.csv, synthetic): an identical copy of
# linear_regression.csv, N = 50 rows, D = 3 feature columns x1..x3, y.
#
# Inference: all vmp (the mean X @ w is linear in the Gaussian w: Normal–Normal); the
# posterior of w is then exactly Gaussian and VMP recovers it in one sweep.
const tau = 4.0

data X: real[N, D] from x1..xD
data y: real[N]

w ~ MvNormal(zeros(D), eye(D))
y ~ Normal(X @ w, tau)
