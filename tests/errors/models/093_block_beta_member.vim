# A `block` statement naming a Beta variable: a Gaussian block joins Normal variables (and Gamma precisions).
# at: 7:12 p
# code: E277
data y: bool[N]
mu ~ Normal(0, 1)
p ~ Beta(1, 1)
block (mu, p)
y ~ Bernoulli(p)
