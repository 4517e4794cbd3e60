# `x[t-1]` with t starting at 1 reads x[0].
# at: 6:19 t-1
# code: E213
data y: real[T]
for t in 1..T {
  x[t] ~ Normal(x[t-1], 1)
  y[t] ~ Normal(x[t], 1)
}
