# A word that is not true/false in a bool column.
# at: column 'y', row 1
# code: E406
data y: bool[N]
p ~ Beta(1, 1)
for n in 1..N { y[n] ~ Bernoulli(p) }
