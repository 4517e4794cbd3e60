# Mortality after cardiac surgery in 12 hospitals (BUGS Examples vol. 1, "Surgical"), as grouped
# Bernoulli rows: `died` is 1 or 0 and `count` says how many operations of that hospital had that
# outcome, so 24 rows stand for 2,814 operations (a binomial summary of Bernoulli trials).
#
#   mu ~ Normal(-2.5, precision 0.1)     population log-odds of death
#   tau ~ Gamma(1, 0.1)                  precision of the hospitals around it
#   b[h] ~ Normal(mu, tau)               log-odds of hospital h = 1..H
#   died[n] ~ Bernoulli(logistic(b[hospital[n]]))   count[n] operations alike
#
# Data (surgical.csv, real): operations and deaths per hospital from Spiegelhalter et al.'s BUGS
# example, two rows per hospital (models/make_data.py surgical).
#
# Inference: vmp for mu, tau and b's prior; ncvmp for the logistic likelihood, whose messages to
# b and ELBO terms are multiplied by count[n]. surgical_expanded.vim is the same model on one row
# per operation (surgical_expanded.csv): the same ELBO and posterior (docs/tutorials/surgical.md).
data hospital: cat(H)[N]
data died: bool[N]
data count: weight[N]
mu ~ Normal(-2.5, 0.1)
tau ~ Gamma(1, 0.1)
for h in 1..H {
  b[h] ~ Normal(mu, tau)
}
for n in 1..N {
  died[n] ~ Bernoulli(logistic(b[hospital[n]]))
}
