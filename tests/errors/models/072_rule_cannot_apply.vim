# `@jaakkola` on a Normal likelihood.
# at: 7:24 @jaakkola
# code: E280
data y: real[N]
mu ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Normal(mu, 1) @jaakkola
}
