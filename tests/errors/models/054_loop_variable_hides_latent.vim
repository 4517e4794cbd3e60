# A loop variable named like a latent variable.
# at: 6:5 mu
# code: E230
data y: real[N]
mu ~ Normal(0, 1)
for mu in 1..N {
  y[mu] ~ Normal(0, 1)
}
