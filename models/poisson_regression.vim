# Bayesian Poisson regression with a log link.
#
#   w ~ MvNormal(0, I)                          D weights, one joint Gaussian q(w)
#   y[n] | w ~ Poisson(exp(dot(x[n], w)))      written vectorised as exp(X @ w)
#
# Data (poisson_regression.csv, synthetic): N = 100 rows; x1 = 1 is the intercept column,
# x2 and x3 standard normal; log rate = 0.5 + 0.8 x2 - 0.4 x3 (numpy default_rng(6)).
#
# Inference: y → w is ncvmp: the exp link is not conjugate to the Gaussian w, but
# E[exp(x·w)] under a Gaussian is closed-form (a log-normal mean). w's prior edge is vmp.
data X: real[N, D] from x1..xD
data y: int[N]

w ~ MvNormal(zeros(D), eye(D))
y ~ Poisson(exp(X @ w))
