# A Bernoulli probability of 1.5.
# at: 6:20 1.5
# code: E258
data y: bool[N]
for n in 1..N {
  y[n] ~ Bernoulli(1.5)
}
