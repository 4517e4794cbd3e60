# Categorical factor analysis (a multinomial-logit latent-trait model; Khan's thesis, ch. 5).
#
#   z[n] ~ MvNormal(zeros(K), eye(K))              latent factors of row n = 1..N
#   lam[j, c] ~ MvNormal(zeros(K), eye(K))         loadings of category c of item j
#   b[j, c] ~ Normal(0, 1)                         offset of category c of item j
#   y[n, j] | z, lam, b ~ Categorical(softmax(lam[j] @ z[n] + b[j]))
#
# lam[j] is the C x K matrix of item j's loadings, so the logit of category c is
# dot(lam[j, c], z[n]) + b[j, c]. K = 2 factors.
#
# Data (categorical_fa.csv, synthetic, models/make_data.py, seed 13): N = 200 rows, J = 6 items
# y1..y6 with C = 3 categories coded 1..3, true K = 2; 5% of the cells are empty (missing) and
# are imputed.
#
# Inference: the priors are vmp; the likelihood edges (to z, lam and b) are cvi by default;
# --method y=bound:bohning is the multinomial Böhning bound, y=bound:stick the stick-breaking
# likelihood under piecewise bounds, y=ncvmp deterministic quadrature. A missing cell is
# marginalised: it sends no message, and its q is the class probabilities averaged over q.
const K = 2

data y: cat(C)[N, J] from y1..yJ

for n in 1..N {
  z[n] ~ MvNormal(zeros(K), eye(K))
}
for j in 1..J {
  for c in 1..C {
    lam[j, c] ~ MvNormal(zeros(K), eye(K))
    b[j, c] ~ Normal(0, 1)
  }
}
for n in 1..N {
  for j in 1..J {
    y[n, j] ~ Categorical(softmax(lam[j] @ z[n] + b[j]))
  }
}
