# A vector indexed with two indices.
# at: 7:17 mu[n, 1]
# code: E210
data y: real[N]
for n in 1..N {
  mu[n] ~ Normal(0, 1)
  y[n] ~ Normal(mu[n, 1], 1)
}
