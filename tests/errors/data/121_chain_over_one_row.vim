# An AR(1) chain over a one-row CSV: the loop `2..T` has no elements.
# command: infer
# at: 8:1 for
# code: E501
data y: real[T]
a ~ Normal(0, 1)
x[1] ~ Normal(0, 1)
for t in 2..T { x[t] ~ Normal(a * x[t-1], 10.0) }
for t in 1..T { y[t] ~ Normal(x[t], 10.0) }
