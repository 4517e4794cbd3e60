# Nothing on the right of `~` at the end of the file.
# at: 6:5
# code: E100
data y: real[N]
for n in 1..N { y[n] ~ Normal(mu, 1) }
mu ~
