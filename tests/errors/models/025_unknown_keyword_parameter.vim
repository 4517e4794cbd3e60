# A keyword parameter the distribution does not have.
# at: 7:21 scale
# code: E252
data y: real[N]
mu ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Normal(mu, scale=2)
}
