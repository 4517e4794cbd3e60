# A row weight with two dimensions.
# at: 5:13 weight[N, D]
# code: E267
data y: real[N]
data count: weight[N, D]
mu ~ Normal(0, 1)
y ~ Normal(mu, 1)
