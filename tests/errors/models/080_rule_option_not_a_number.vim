# A numeric option given a word.
# at: 7:46 abc
# code: E272
data y: bool[N]
w ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Bernoulli(logistic(w)) @cvi(samples=abc)
}
