# `--set` of a constant the model does not declare.
# args: --set KK=4
# at: none
# code: E300
# hint: K
const K = 3
data y: real[N]
p ~ Dirichlet(ones(K))
mu ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(mu, 1) }
