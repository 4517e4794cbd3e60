# A constant drawn with `~`.
# at: 6:1 K
# code: E233
const K = 3
data y: real[N]
K ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(K, 1) }
