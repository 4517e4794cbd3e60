# A negative count for a Poisson variable.
# at: column 'count', row 3
# code: E420
data y: int[N] from count
lam ~ Gamma(1, 1)
for n in 1..N { y[n] ~ Poisson(lam) }
