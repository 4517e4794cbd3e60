# A negative constant precision.
# at: 5:16 -1
# code: E258
data y: real[N]
mu ~ Normal(0, -1)
for n in 1..N { y[n] ~ Normal(mu, 1) }
