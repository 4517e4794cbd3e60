# `@jaakkola` on a Normal prior with constant arguments.
# at: 5:19 @jaakkola
# code: E285
data y: real[N]
mu ~ Normal(0, 1) @jaakkola
for n in 1..N { y[n] ~ Normal(mu, 1) }
