# `<-` (BUGS/R) instead of `=`.
# at: 6:4 <-
# code: E100
data y: real[N]
mu ~ Normal(0, 1)
m2 <- mu * 2
for n in 1..N { y[n] ~ Normal(m2, 1) }
