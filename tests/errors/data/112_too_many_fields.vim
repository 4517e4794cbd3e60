# A row with one field too many.
# at: row 2
# code: E402
data h: real[N] from height
mu ~ Normal(0, 1)
for n in 1..N { h[n] ~ Normal(mu, 1) }
