# A Poisson variable that is not data.
# at: 7:3 k
# code: E257
data y: real[N]
lam ~ Gamma(1, 1)
for n in 1..N {
  k[n] ~ Poisson(lam)
  y[n] ~ Normal(k[n], 1)
}
