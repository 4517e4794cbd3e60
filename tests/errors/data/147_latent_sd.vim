# A latent standard deviation, as Stan writes it (`Normal(mu, sd=sigma)` with sigma ~ Gamma).
# command: infer
# at: 8:1 y
# code: E500
data y: real[N]
mu ~ Normal(0, sd=10)
sigma ~ Gamma(2, 1)
y ~ Normal(mu, sd=sigma)
