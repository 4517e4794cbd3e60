# An infinite value in a category column whose number of levels comes from the data.
# at: column 'c', row 2
# code: E409
data c: cat(K)[N]
p ~ Dirichlet(ones(K))
for n in 1..N { c[n] ~ Categorical(p) }
