# `inf` in the data of a Gaussian chain.
# at: column 'y', row 2
# code: E406
data y: real[T]
a ~ Normal(0, 1)
x[1] ~ Normal(0, 1)
for t in 2..T { x[t] ~ Normal(a * x[t-1], 10.0) }
for t in 1..T { y[t] ~ Normal(x[t], 10.0) }
