# A rule annotation written before a statement that follows another `~` statement (it would annotate the previous one).
# at: 8:3 @jaakkola
# code: E274
data y: bool[N]
w ~ Normal(0, 1)
for n in 1..N {
  z[n] ~ Normal(w, 1)
  @jaakkola y[n] ~ Bernoulli(logistic(z[n]))
}
