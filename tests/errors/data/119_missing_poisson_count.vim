# An empty cell in a Poisson response (counts are not imputed).
# at: column 'y', row 2
# code: E417
data y: int[N]
lam ~ Gamma(1, 1)
y ~ Poisson(lam)
