# Binary factor analysis (logistic latent-trait / item-response model).
#
#   z[n] ~ MvNormal(zeros(K), eye(K))          latent factors of row n = 1..N
#   lam[j] ~ MvNormal(zeros(K), eye(K))        loadings of item j = 1..J
#   c[j] ~ Normal(0, 1)                        item offsets
#   y[n, j] | z, lam, c ~ Bernoulli(logistic(dot(lam[j], z[n]) + c[j]))
#
# K = 2 factors.
#
# Data (binary_fa.csv, synthetic): N = 200 rows, J = 10 binary items y1..y10, true K = 2
# (numpy default_rng(9)).
#
# Inference: the priors are vmp; every likelihood edge (to z, lam and c) is ncvmp: the
# logit is linear in each of them given the others (bilinear overall), and the logistic link
# is not conjugate to a Gaussian. z is local (one per row); lam and c are global.
# The margin dot(lam[j], z[n]) is bilinear: lam[j] and z[n] are independent in q, and their
# means start at draws from q (the all-zero start is a saddle). Strict lower bounds:
# --method y=bound:piecewise (or @piecewise), y=jaakkola, y=bohning.
const K = 2

data y: bool[N, J] from y1..yJ

for n in 1..N {
  z[n] ~ MvNormal(zeros(K), eye(K))
}
for j in 1..J {
  lam[j] ~ MvNormal(zeros(K), eye(K))
  c[j] ~ Normal(0, 1)
}
for n in 1..N {
  for j in 1..J {
    y[n, j] ~ Bernoulli(logistic(dot(lam[j], z[n]) + c[j]))
  }
}
