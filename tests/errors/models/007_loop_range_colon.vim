# A loop range written `1:N` instead of `1..N`.
# at: 6:11 :
# code: E100
data y: real[N]
mu ~ Normal(0, 1)
for n in 1:N { y[n] ~ Normal(mu, 1) }
