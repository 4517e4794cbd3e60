# A loop bound that is not a size; the hint names the declared one.
# at: 5:13 M
# code: E232
data y: real[N]
for n in 1..M { y[n] ~ Normal(mu, 1) }
