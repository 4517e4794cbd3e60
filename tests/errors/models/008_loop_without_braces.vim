# A loop body without braces.
# at: 6:15 y
# code: E100
data y: real[N]
mu ~ Normal(0, 1)
for n in 1..N y[n] ~ Normal(mu, 1)
