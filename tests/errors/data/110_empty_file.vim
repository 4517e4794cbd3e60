# A data file with nothing in it.
# at: 
# code: E401
data h: real[N] from height
mu ~ Normal(0, 1)
for n in 1..N { h[n] ~ Normal(mu, 1) }
