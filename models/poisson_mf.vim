# Poisson–gamma matrix factorisation (Gopalan, Hofman & Blei 2015, without the hierarchy),
# data in long format: one row per (user, item) cell.
#
#   theta[u, k] ~ Gamma(a, b)      user preferences, u = 1..U, k = 1..K; Gamma(shape, rate)
#   beta[i, k] ~ Gamma(c, d)       item attributes, i = 1..I
#   count[r] | theta, beta ~ Poisson(dot(theta[user[r]], beta[item[r]]))    r = 1..R
#
# K = 3, a = b = c = d = 0.3 (sparse, mean-one factors).
#
# Data (poisson_mf.csv, synthetic): U = 30 users (u01..u30) x I = 40 items (i01..i40), every
# cell a row (zeros included), K = 3 true factors drawn from Gamma(0.3, rate 0.3)
# (numpy default_rng(7)).
#
# Inference: the priors are vmp. The rate is a SUM of products of Gammas, so the likelihood is
# not conjugate to either factor as written; the analyzer has no pattern for it and uses cvi
# for count → theta and count → beta. (Introducing auxiliary Poisson counts per factor k, as
# Gopalan et al. do, would make every update conjugate.) theta and beta are local: one row per
# level of user / item.
const K = 3
const a = 0.3
const b = 0.3
const c = 0.3
const d = 0.3

data user: cat(U)[R]
data item: cat(I)[R]
data count: int[R]

for u in 1..U {
  for k in 1..K {
    theta[u, k] ~ Gamma(a, b)
  }
}
for i in 1..I {
  for k in 1..K {
    beta[i, k] ~ Gamma(c, d)
  }
}
for r in 1..R {
  count[r] ~ Poisson(dot(theta[user[r]], beta[item[r]])) @cvi(step=0.5, kappa=0)
}
