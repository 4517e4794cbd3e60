# Factorial hidden Markov model (Ghahramani & Jordan 1997; seed 001 §21.4.1) with a scalar output:
# two independent hidden chains, each with its own dynamics and its own output levels, whose
# outputs add.
#
#   pi1, pi2 ~ Dirichlet(ones(K))                 initial states
#   A1[k], A2[k] ~ Dirichlet(ones(K))             transition rows
#   w1[k], w2[k] ~ Normal(0, 0.1)                 output level of state k of each chain
#   tau ~ Gamma(1, 0.1)                           output precision
#   z1, z2: first-order chains (z[1] ~ Categorical(pi), z[t] ~ Categorical(A[z[t-1]]))
#   y[t] ~ Normal(w1[z1[t]] + w2[z2[t]], tau)
#
# K = 3 states per chain.
#
# Data (factorial_hmm.csv, synthetic, see make_data.py): T = 300; a slow chain with levels
# (-2, 0, 2) and a fast one with levels (-0.6, 0, 0.6), noise sd 0.25.
#
# Inference: structured mean field (seed 001 §21.4.1): q(z1) q(z2) with each factor one chain,
# updated by forward-backward with the local evidence averaged over the other chain; q(w), q(A),
# q(pi), q(tau) conjugate. Its bound is far above that of the fully factorised
# q(z) = prod_t q(z1[t]) q(z2[t]) (tests/test_factorial_hmm.py, and the tutorial).
const K = 3

data y: real[T]

pi1 ~ Dirichlet(ones(K))
pi2 ~ Dirichlet(ones(K))
tau ~ Gamma(1, 0.1)
for k in 1..K {
  A1[k] ~ Dirichlet(ones(K))
  A2[k] ~ Dirichlet(ones(K))
  w1[k] ~ Normal(0, 0.1)
  w2[k] ~ Normal(0, 0.1)
}
z1[1] ~ Categorical(pi1)
z2[1] ~ Categorical(pi2)
for t in 2..T {
  z1[t] ~ Categorical(A1[z1[t-1]])
  z2[t] ~ Categorical(A2[z2[t-1]])
}
for t in 1..T {
  y[t] ~ Normal(w1[z1[t]] + w2[z2[t]], tau)
}
