# Hidden Markov model with Gaussian emissions (Beal 2003, ch. 3; MacKay 1997) on the Old Faithful
# waiting times, in eruption order.
#
#   pi ~ Dirichlet(ones(K))                     initial state
#   A[k] ~ Dirichlet(ones(K))                   row k of the transition matrix
#   tau[k] ~ Gamma(a0, b0)                      precision of state k
#   mu[k] | tau[k] ~ Normal(m0, beta0 * tau[k]) mean of state k (Normal-Gamma, @joint)
#   z[1] ~ Categorical(pi),  z[t] | z[t-1] ~ Categorical(A[z[t-1]])
#   y[t] | z[t] ~ Normal(mu[z[t]], tau[z[t]])
#
# K = 2. The priors are hmmlearn's VariationalGaussianHMM defaults written in our terms: its
# Wishart(dof 1, scale_prior 1e-3) on a 1-D precision is Gamma(shape 1/2, rate 1e-3 / 2), its
# beta_prior is 1, and its means_prior (the data mean by default) is set to 70 here.
#
# Data (hmm.csv, real): the 272 waiting times (minutes) of the Old Faithful data as distributed
# with R's datasets package (shared/data/old_faithful.csv), in the order of the eruptions.
#
# Inference: the analyzer finds the chain by itself: q(z) is ONE discrete chain, updated by
# forward-backward (`chain q` in ppl check); every edge is vmp.
const K = 2
const m0 = 70.0
const beta0 = 1.0
const a0 = 0.5
const b0 = 0.0005

data y: real[T] from waiting

pi ~ Dirichlet(ones(K))
for k in 1..K {
  A[k] ~ Dirichlet(ones(K))
  tau[k] ~ Gamma(a0, b0)
  mu[k] ~ Normal(m0, beta0 * tau[k]) @joint
}
z[1] ~ Categorical(pi)
for t in 2..T {
  z[t] ~ Categorical(A[z[t-1]])
}
for t in 1..T {
  y[t] ~ Normal(mu[z[t]], tau[z[t]])
}
