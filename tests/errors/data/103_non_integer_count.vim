# 2.5 in an int column.
# at: column 'count', row 2
# code: E407
data y: int[N] from count
lam ~ Gamma(1, 1)
for n in 1..N { y[n] ~ Poisson(lam) }
