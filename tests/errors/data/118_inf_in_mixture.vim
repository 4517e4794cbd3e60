# `-inf` in the data of a mixture.
# at: column 'y', row 3
# code: E406
const K = 2
data y: real[N]
pi ~ Dirichlet(ones(K))
for k in 1..K { mu[k] ~ Normal(0, 0.01) }
for n in 1..N {
  z[n] ~ Categorical(pi)
  y[n] ~ Normal(mu[z[n]], 1.0)
}
