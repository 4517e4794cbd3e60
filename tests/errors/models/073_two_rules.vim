# Two rule annotations on one statement.
# at: 7:38 @ncvmp
# code: E273
data y: bool[N]
w ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Bernoulli(logistic(w)) @cvi @ncvmp
}
