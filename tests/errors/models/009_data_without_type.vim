# A data declaration without `:` and a type.
# at: 4:8 real
# code: E100
data y real[N]
mu ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(mu, 1) }
