# A negative row weight.
# at: column 'count', row 2
# code: E430
data y: real[N]
data count: weight[N]
mu ~ Normal(0, 1)
y ~ Normal(mu, 1)
