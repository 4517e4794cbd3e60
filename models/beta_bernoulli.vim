# Is the coin fair?  Beta–Bernoulli, the smallest conjugate model.
#
#   theta ~ Beta(1, 1)                uniform prior on the probability of heads
#   y[n] | theta ~ Bernoulli(theta)   n = 1..N flips, 1 = heads
#
# Data (beta_bernoulli.csv, synthetic): 20 flips of a coin with P(heads) = 0.7
# (numpy default_rng(2)). The exact posterior is Beta(1 + heads, 1 + tails).
#
# Inference: vmp on both edges; the likelihood reads theta itself as its probability
# (Bernoulli–Beta), so VMP is exact here.
data y: bool[N]
theta ~ Beta(1, 1)
y ~ Bernoulli(theta)
