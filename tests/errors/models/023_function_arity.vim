# A built-in called with too many arguments.
# at: 7:18 exp(w, 2)
# code: E206
data y: int[N]
w ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Poisson(exp(w, 2))
}
