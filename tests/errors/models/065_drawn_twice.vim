# A variable drawn twice.
# at: 6:1 mu
# code: E2??
data y: real[N]
mu ~ Normal(0, 1)
mu ~ Normal(0, 10)
for n in 1..N { y[n] ~ Normal(mu, 1) }
