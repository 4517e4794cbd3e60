# Values 0 and 5 for a category with 3 levels.
# at: column 'c', row 2
# code: E4??
data c: cat(3)[N]
p ~ Dirichlet(ones(3))
for n in 1..N { c[n] ~ Categorical(p) }
