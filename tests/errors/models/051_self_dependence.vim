# A variable that reads itself without a lag.
# at: 7:17 x[t]
# code: E238
data y: real[T]
x[1] ~ Normal(0, 1)
for t in 2..T {
  x[t] ~ Normal(x[t], 1)
}
for t in 1..T { y[t] ~ Normal(x[t], 1) }
