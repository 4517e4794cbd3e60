# Bayesian logistic regression on the Wisconsin breast cancer data.
#
#   w ~ MvNormal(0, I)                            D weights with one joint Gaussian q(w)
#   y[n] | w ~ Bernoulli(logistic(dot(x[n], w)))  written vectorised as logistic(X @ w)
#
# Data (logistic_regression.csv, real): scikit-learn's load_breast_cancer, 569 tumours x 30
# features. Column x1 is the INTERCEPT, a column of ones, so w[1] is the intercept and gets
# the same Normal(0, 1) prior; x2..x31 are the 30 features, each standardised by its mean and
# population sd (ddof = 0). y = 1 for benign, 0 for malignant. D = 31 is read off the columns.
#
# Inference: the edge y → w is ncvmp: the logistic link is not conjugate to the Gaussian w,
# and NC-VMP's expectations reduce to one-dimensional integrals over x[n]·w, done by
# quadrature. w's prior edge is vmp. w is global.
data X: real[N, D] from x1..xD
data y: bool[N]

w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(X @ w))
