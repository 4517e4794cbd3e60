# Counts with an unknown rate: Gamma–Poisson.
#
#   lambda ~ Gamma(a0, b0)            Gamma(shape, rate): prior mean a0 / b0 = 2
#   y[n] | lambda ~ Poisson(lambda)   n = 1..N
#
# Data (gamma_poisson.csv, synthetic): 30 counts from Poisson(3.5) (numpy default_rng(3)).
# The exact posterior is Gamma(a0 + sum(y), b0 + N).
#
# Inference: vmp on both edges (Poisson–Gamma: the rate is the Gamma lambda itself).
const a0 = 2.0
const b0 = 1.0

data y: int[N]
lambda ~ Gamma(a0, b0)
y ~ Poisson(lambda)
