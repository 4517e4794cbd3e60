# One `}` too many.
# at: 9:1 }
# code: E100
data y: real[N]
mu ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Normal(mu, 1)
}
}
