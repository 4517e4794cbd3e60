# A constant index past the end of a constant-size vector.
# at: 7:33 4
# code: E214
const K = 3
p ~ Dirichlet(ones(K))
data y: real[N]
for n in 1..N { y[n] ~ Normal(p[4], 1) }
