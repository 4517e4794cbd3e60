# A Dirichlet concentration vector with a negative entry.
# at: 6:15 [1, -2, 1]
# code: E258
const K = 3
data c: cat(K)[N]
p ~ Dirichlet([1, -2, 1])
for n in 1..N { c[n] ~ Categorical(p) }
