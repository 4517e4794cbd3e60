# The value 2 in an int column drawn from Bernoulli.
# at: column 'y', row 2
# code: E420
data y: int[N]
p ~ Beta(1, 1)
for n in 1..N { y[n] ~ Bernoulli(p) }
