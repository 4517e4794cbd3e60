# A constant precision of `1/0`.
# at: 5:16 1/0
# code: E2??
data y: real[N]
mu ~ Normal(0, 1/0)
for n in 1..N { y[n] ~ Normal(mu, 1) }
