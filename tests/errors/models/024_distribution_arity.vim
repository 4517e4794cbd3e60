# A distribution given three positional arguments.
# at: 5:6 Normal(0, 1, 3)
# code: E251
data y: real[N]
mu ~ Normal(0, 1, 3)
for n in 1..N { y[n] ~ Normal(mu, 1) }
