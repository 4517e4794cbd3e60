# Two variables that depend on each other.
# at: 5:1 a ~
# code: E239
data y: real[N]
a ~ Normal(b, 1)
b ~ Normal(a, 1)
for n in 1..N { y[n] ~ Normal(a, 1) }
