# The same data name declared twice.
# at: 5:6 y
# code: E240
data y: real[N]
data y: int[N]
mu ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(mu, 1) }
