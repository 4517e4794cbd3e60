# `@cvi(minibatch=...)` subsamples rows inside the groups a stochastic schedule already samples.
# command: infer
# at: 13:3 y
# code: E600
schedule svi(batch=2)
data g: cat(G)[N]
data y: bool[N]
mu ~ Normal(0, 1)
for j in 1..G {
  a[j] ~ Normal(mu, 1.0)
}
for n in 1..N {
  y[n] ~ Bernoulli(logistic(a[g[n]])) @cvi(minibatch=2)
}
