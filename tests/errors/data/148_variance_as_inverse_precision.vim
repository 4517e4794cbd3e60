# A Gamma variance written as the inverse of the precision (`Normal(mu, 1/v)`), the mean conjugate.
# command: infer
# at: 8:1 y
# code: E500
data y: real[N]
mu ~ Normal(0, sd=10)
v ~ Gamma(2, 1)
y ~ Normal(mu, 1/v)
