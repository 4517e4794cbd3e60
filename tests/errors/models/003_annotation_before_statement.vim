# A rule annotation written before the statement instead of after it.
# at: 7:3 @cvi
# code: E100
data y: bool[N]
w ~ Normal(0, 1)
for n in 1..N {
  @cvi y[n] ~ Bernoulli(logistic(w))
}
