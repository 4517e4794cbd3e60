# A statement inside a loop that does not use the loop variable.
# at: 6:3 mu
# code: E237
data y: real[N]
for n in 1..N {
  mu ~ Normal(0, 1)
  y[n] ~ Normal(mu, 1)
}
