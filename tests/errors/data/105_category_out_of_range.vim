# Category 4 for a cat(K) column with K = 3.
# at: column 'c', row 2
# code: E409
const K = 3
data c: cat(K)[N]
p ~ Dirichlet(ones(K))
for n in 1..N { c[n] ~ Categorical(p) }
