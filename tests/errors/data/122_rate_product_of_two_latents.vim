# A Poisson rate that multiplies two Gamma latents.
# command: infer
# at: 8:13 lam * s
# code: E500
data y: int[N]
lam ~ Gamma(1, 1)
s ~ Gamma(1, 1)
y ~ Poisson(lam * s)
