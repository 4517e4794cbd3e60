# models/surgical.vim on one row per operation: the expanded form of the grouped data, for
# comparison (docs/tutorials/surgical.md); the same hierarchical logistic model without weights.
#
# Data (surgical_expanded.csv, real): the BUGS "Surgical" hospitals, one row per operation,
# 2,814 rows (models/make_data.py surgical writes it with surgical.csv).
#
# Inference: vmp for mu, tau and b's prior; ncvmp for the logistic likelihood.
data hospital: cat(H)[N]
data died: bool[N]
mu ~ Normal(-2.5, 0.1)
tau ~ Gamma(1, 0.1)
for h in 1..H {
  b[h] ~ Normal(mu, tau)
}
for n in 1..N {
  died[n] ~ Bernoulli(logistic(b[hospital[n]]))
}
