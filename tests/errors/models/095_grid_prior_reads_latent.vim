# `@grid` on a precision whose Gamma prior reads a latent rate: a grid weighs its nodes by a prior with constant parameters.
# at: 6:16 s
# code: E762
data y: real[N]
s ~ Gamma(1, 1)
tau ~ Gamma(2, s) @grid
mu ~ Normal(0, 1)
y ~ Normal(mu, tau)
