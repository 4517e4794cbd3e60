# A variable both defined with `=` and drawn with `~`.
# at: 6:1 mu
# code: E235
data y: real[N]
mu = 2.0
mu ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(mu, 1) }
