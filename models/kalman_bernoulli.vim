# A state-space model (Kalman filter) with Bernoulli observations: a latent AR(1) state seen
# only through coin flips.
#
#   a ~ Normal(0, 1)                           AR coefficient
#   x[1] ~ Normal(0, 1)
#   x[t] | x[t-1], a ~ Normal(a * x[t-1], q)   t = 2..T, q = transition PRECISION (fixed)
#   y[t] | x[t] ~ Bernoulli(logistic(x[t]))    t = 1..T
#
# q = 10 (transition sd about 0.32).
#
# Data (kalman_bernoulli.csv, synthetic): T = 500 flips from x[t] = 0.95 x[t-1] + N(0, 1/10),
# x[1] ~ N(0, 1) (numpy default_rng(8)). The exact posterior of a (forward algorithm on a grid
# of states) is 0.956 +- 0.016. (An earlier data set of 100 flips from the same generator had
# an exact posterior of 0.11 +- 0.49: it did not identify a.)
#
# Inference: x[1] and x[t] make x a first-order Gaussian chain, so q(x) is ONE Gaussian over
# the chain (tridiagonal precision; `chain q` in `ppl check`), and the Gaussian factors are vmp.
# The observation edge y -> x would default to ncvmp (logistic link, 1-D quadrature); the
# annotation asks for cvi instead, with a constant step 0.5 and 16 Monte Carlo samples: each
# update of x is then a Kalman smoother on the Gaussian pseudo-observations of the flips.
const q = 10.0

data y: bool[T]

a ~ Normal(0, 1)
x[1] ~ Normal(0, 1)
for t in 2..T {
  x[t] ~ Normal(a * x[t-1], q)
}
for t in 1..T {
  y[t] ~ Bernoulli(logistic(x[t])) @cvi(step=0.5, kappa=0, samples=16)
}
