# Mixed-data factor analysis: binary, categorical and ordinal items of one row share its factors
# (Khan, Marlin, Bouchard & Murphy 2010; Khan's thesis, ch. 6).
#
#   z[n] ~ MvNormal(zeros(K), eye(K))                       latent factors of row n = 1..N
#   x[n, j] ~ Bernoulli(logistic(dot(u[j], z[n]) + a[j]))   binary item j = 1..JB
#   y[n, j] ~ Categorical(softmax(lam[j] @ z[n] + b[j]))    categorical item j = 1..JC
#   r[n, j] ~ OrderedLogistic(dot(w[j], z[n]) + d[j], cut)  ordinal item j = 1..JO, ratings 1..4
#   loadings u[j], lam[j, c], w[j] ~ MvNormal(0, I); offsets a[j], b[j, c], d[j] ~ Normal(0, 1)
#
# The cutpoints are fixed; each ordinal item's offset d[j] moves all three together. K = 2.
#
# Data (mixed_fa.csv, synthetic, models/make_data.py, seed 14): N = 250 rows; b1..b3 binary,
# c1..c3 categorical with 3 categories coded 1..3, o1..o3 ratings 1..4 from a cumulative logit
# with these cutpoints; true K = 2. 5% of the categorical cells are empty and are imputed.
#
# Inference: the priors are vmp; the binary and ordinal edges are ncvmp, the categorical ones
# cvi; --method x=bound:bohning,y=bound:bohning,r=bound:piecewise puts every item under a bound.
const K = 2
const cut = [-1.5, 0.0, 1.5]

data x: bool[N, JB] from b1..bJB
data y: cat(C)[N, JC] from c1..cJC
data r: int[N, JO] from o1..oJO

for n in 1..N {
  z[n] ~ MvNormal(zeros(K), eye(K))
}
for j in 1..JB {
  u[j] ~ MvNormal(zeros(K), eye(K))
  a[j] ~ Normal(0, 1)
}
for j in 1..JC {
  for c in 1..C {
    lam[j, c] ~ MvNormal(zeros(K), eye(K))
    b[j, c] ~ Normal(0, 1)
  }
}
for j in 1..JO {
  w[j] ~ MvNormal(zeros(K), eye(K))
  d[j] ~ Normal(0, 1)
}
for n in 1..N {
  for j in 1..JB {
    x[n, j] ~ Bernoulli(logistic(dot(u[j], z[n]) + a[j]))
  }
  for j in 1..JC {
    y[n, j] ~ Categorical(softmax(lam[j] @ z[n] + b[j]))
  }
  for j in 1..JO {
    r[n, j] ~ OrderedLogistic(dot(w[j], z[n]) + d[j], cut)
  }
}
