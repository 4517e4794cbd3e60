# Bayesian ordinal (cumulative-logit) regression with known cutpoints.
#
#   w ~ MvNormal(0, I)                                   D = 3 weights, one joint Gaussian q(w)
#   P(rating[n] <= k | w) = logistic(cut[k] - x[n] . w)  k = 1..4, ratings 1..5
#
# Data (ordinal_regression.csv, synthetic, models/make_data.py, seed 12): 300 rows, x1..x3
# standard normal, true w = (1.0, -0.7, 0.4), the same cutpoints as below; the rating is an
# integer 1..5. There is no intercept: the cutpoints take its place.
#
# Inference: the edge rating -> w is ncvmp: the cumulative-logit likelihood is not conjugate to
# the Gaussian w, and its expectations are one-dimensional integrals over x[n] . w, done by
# quadrature. w's prior edge is vmp. w is global.
const cut = [-2.0, -0.7, 0.7, 2.0]
data x: real[N, D] from x1..x3
data rating: int[N]

w ~ MvNormal(zeros(D), eye(D))
for n in 1..N {
  rating[n] ~ OrderedLogistic(dot(x[n], w), cut)
}
