# A latent variable whose distribution reads the variable itself.
# at: 4:12 x
# code: E238
x ~ Normal(x, 1)
