# The Gamma toy model of Khan & Lin (2017), App. E.3: a Gamma variable as the SHAPE of a Gamma
# likelihood, so q(z) is a Gamma that no conjugate message can reach.
#
#   z ~ Gamma(a, b)                 Gamma(shape, rate): prior mean a / b = 2
#   y[n] | z ~ Gamma(z, 1)          n = 1..N, z the shape, rate 1
#
# Data (gamma_toy.csv, synthetic): N = 50 draws from Gamma(shape 3, rate 1) (numpy default_rng(11)).
#
# Inference: y → z is cvi (the analyzer's default: no conjugate pattern for a Gamma's shape).
# The message is the mean-parameter gradient of E_q[log f] in q(z) = Gamma(alpha, beta),
# here by Monte Carlo (16 draws a sweep, step t^-0.6); @cvi(samples=0) makes it exact
# (Gauss quadrature and the Fisher solve) and its fixed point the ELBO optimum over Gamma q.
const a = 2.0
const b = 1.0

data y: real[N]
z ~ Gamma(a, b)
y ~ Gamma(z, 1.0)
