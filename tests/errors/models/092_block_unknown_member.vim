# A `block` statement naming a variable that is not declared (a typo).
# at: 6:11 mu_c
# code: E276
# hint: mu_a
data y: real[N]
block (a, mu_c)
mu_a ~ Normal(0, 1)
a ~ Normal(mu_a, 1)
y ~ Normal(a, 1)
