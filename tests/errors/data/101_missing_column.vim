# The bound column is not in the file; the hint names the near miss.
# at: column 'height'
# code: E403
# hint: heigth
data h: real[N] from height
mu ~ Normal(0, 1)
for n in 1..N { h[n] ~ Normal(mu, 1) }
