# A constant expression dividing by zero (`0^-1`) as a precision.
# at: 5:16 0^-1
# code: E2??
data y: real[N]
mu ~ Normal(0, 0^-1)
for n in 1..N { y[n] ~ Normal(mu, 1) }
