# `--set` of an integer constant to 2.5.
# args: --set K=2.5
# at: none
# code: E301
const K = 3
data y: real[N]
p ~ Dirichlet(ones(K))
mu ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(mu, 1) }
