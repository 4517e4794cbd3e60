# A constant loop bound below the first: `for k in 1..K` with K = -3.
# at: 5:13 K
# code: E221
const K = -3
for k in 1..K { mu[k] ~ Normal(0, 1) }
