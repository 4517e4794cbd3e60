# A `block` statement naming a Gamma precision: a Gaussian block joins Normal variables.
# at: 7:12 tau
# code: E277
data y: real[N]
mu ~ Normal(0, 1)
tau ~ Gamma(1, 1)
block (mu, tau)
y ~ Normal(mu, tau)
