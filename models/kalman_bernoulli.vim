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
# Data (kalman_bernoulli.csv, synthetic): T = 100 flips from x[t] = 0.95 x[t-1] + N(0, 1/10),
# x[1] ~ N(0, 1) (numpy default_rng(8)).
#
# Inference: the Gaussian chain is conjugate, vmp (x[t]'s mean is linear in x[t-1] and in a).
# The observation edge y → x would default to ncvmp (logistic link, 1-D quadrature); the
# annotation asks for cvi instead, with step size 0.5 and 16 Monte Carlo samples. x is local
# (one per time step), a global.
const q = 10.0

data y: bool[T]

a ~ Normal(0, 1)
x[1] ~ Normal(0, 1)
for t in 2..T {
  x[t] ~ Normal(a * x[t-1], q)
}
for t in 1..T {
  y[t] ~ Bernoulli(logistic(x[t])) @cvi(step=0.5, samples=16)
}
