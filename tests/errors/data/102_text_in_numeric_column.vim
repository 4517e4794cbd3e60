# A word in a real column.
# at: column 'height', row 3
# code: E406
data h: real[N] from height
mu ~ Normal(0, 1)
for n in 1..N { h[n] ~ Normal(mu, 1) }
