# A loop is never closed.
# at: 7:23
# code: E100
data y: real[N]
mu ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Normal(mu, 1)
