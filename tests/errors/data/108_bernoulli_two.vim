# The value 2 in a bool column.
# at: column 'y', row 2
# code: E408
data y: bool[N]
p ~ Beta(1, 1)
for n in 1..N { y[n] ~ Bernoulli(p) }
