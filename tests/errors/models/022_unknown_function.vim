# A misspelt built-in function.
# at: 8:18 expp
# code: E204
# hint: exp
data y: int[N]
w ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Poisson(expp(w))
}
