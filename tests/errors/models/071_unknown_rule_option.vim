# An option that `@cvi` does not take.
# at: 7:38 steps
# code: E271
data y: bool[N]
w ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Bernoulli(logistic(w)) @cvi(steps=0.5)
}
