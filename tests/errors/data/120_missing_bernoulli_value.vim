# An empty cell in a Bernoulli response (0/1 values are not imputed).
# at: column 'y', row 2
# code: E417
data y: bool[N]
p ~ Beta(1, 1)
y ~ Bernoulli(p)
