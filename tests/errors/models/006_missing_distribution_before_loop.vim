# Nothing on the right of `~`; the next line starts a loop.
# at: 6:1 for
# code: E100
data y: real[N]
mu ~
for n in 1..N { y[n] ~ Normal(mu, 1) }
