# Two loops drawing the same elements of a variable.
# at: 6:17 x[k]
# code: E2??
data y: real[N]
for k in 1..3 { x[k] ~ Normal(0, 1) }
for k in 1..4 { x[k] ~ Normal(0, 1) }
for n in 1..N { y[n] ~ Normal(x[1], 1) }
