# Latent class analysis: a mixture of independent categoricals.
#
#   pi ~ Dirichlet(ones(K))                    class weights
#   phi[k, j] ~ Dirichlet(ones(L))             response distribution of class k on item j
#   z[n] | pi ~ Categorical(pi)                class of person n = 1..N
#   x[n, j] | z, phi ~ Categorical(phi[z[n], j])    j = 1..J items, L levels each
#
# K = 3 classes. L (levels per item) is read off the data: the codes 1..L of the answers.
#
# Data (latent_class.csv, synthetic): N = 300 people, J = 6 items x1..x6 with L = 3 levels
# coded 1..3; true K = 3 classes with weights 0.5, 0.3, 0.2 (numpy default_rng(10)).
#
# Inference: all conjugate, vmp: Categorical–Dirichlet for z → pi and x → phi, z a mixture
# selector in x's likelihood. z is local (one per row); pi and phi are global.
const K = 3

data x: cat(L)[N, J] from x1..xJ

pi ~ Dirichlet(ones(K))
for k in 1..K {
  for j in 1..J {
    phi[k, j] ~ Dirichlet(ones(L))
  }
}
for n in 1..N {
  z[n] ~ Categorical(pi)
  for j in 1..J {
    x[n, j] ~ Categorical(phi[z[n], j])
  }
}
