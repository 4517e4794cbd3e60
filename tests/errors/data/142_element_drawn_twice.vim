# z[2] is drawn twice (by `z[2] ~` and by the loop from 2) and z[1] never.
# command: infer
# at: 8:1 z
# code: E504
const K = 2
data y: real[T]
for k in 1..K { w[k] ~ Normal(0, 1) }
z[2] ~ Categorical(ones(K) / K)
for t in 2..T { z[t] ~ Categorical(ones(K) / K) }
for t in 1..T { y[t] ~ Normal(w[z[t]], 1.0) }
