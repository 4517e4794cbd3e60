# A `block` statement naming a Gamma array: only one scalar precision joins through its logarithm.
# at: 6:3 t
# code: E630
data y: real[N]
for k in 1..2 {
  t[k] ~ Gamma(1, 1)
}
mu ~ Normal(0, 1)
y ~ Normal(mu, t[1])
block (mu, t)
