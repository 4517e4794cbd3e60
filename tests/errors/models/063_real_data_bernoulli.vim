# Data declared real used as the target of a Bernoulli.
# at: 6:17 y[n]
# code: E260
data y: real[N]
p ~ Beta(1, 1)
for n in 1..N { y[n] ~ Bernoulli(p) }
