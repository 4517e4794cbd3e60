# An empty cell in a covariate (data not drawn with `~`).
# at: column 'x', row 2
# code: E410
data x: real[N]
data y: real[N]
w ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(w * x[n], 1) }
