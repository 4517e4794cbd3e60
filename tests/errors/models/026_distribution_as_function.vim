# A distribution used on the right of `=`.
# at: 6:5 Normal
# code: E203
data y: real[N]
mu ~ Normal(0, 1)
m = Normal(mu, 1)
for n in 1..N { y[n] ~ Normal(m, 1) }
