# A Gamma shape of 0.
# at: 5:13 0
# code: E258
data y: real[N]
tau ~ Gamma(0, 1)
for n in 1..N { y[n] ~ Normal(0, tau) }
