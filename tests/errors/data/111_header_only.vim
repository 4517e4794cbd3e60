# A data file with a header and no rows.
# at: 
# code: E401
data h: real[N] from height
mu ~ Normal(0, 1)
for n in 1..N { h[n] ~ Normal(mu, 1) }
