# Bayesian logistic regression with more features than rows (D > N), as in gene-expression data.
#
#   w ~ MvNormal(0, I)                            D = 400 weights, one joint Gaussian q(w)
#   y[n] | w ~ Bernoulli(logistic(dot(x[n], w)))  n = 1..N, N = 40, written as logistic(X @ w)
#
# Data (logistic_wide.csv, synthetic): x1 = 1 (intercept), x2..x400 standard normal; only
# x2..x6 matter, w = (0, 2, -2, 1.5, -1.5, 1, 0, ..., 0) (models/make_data.py, seed 13).
#
# Inference: the edge y → w is ncvmp, as in logistic_regression.vim. q(w) has 400 + 400²
# natural parameters, but the likelihood's message has rank N = 40: the engine keeps it as its
# rows and solves q(w) through a 40 × 40 matrix (Woodbury), never inverting the 400 × 400
# precision.
data X: real[N, D] from x1..xD
data y: bool[N]

w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(X @ w))
