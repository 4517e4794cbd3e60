# A row weight read in an expression: it is not data of the model.
# at: 7:36 count
# code: E269
data y: real[N]
data count: weight[N]
mu ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(mu * count[n], 1) }
