# An array indexed with a real number.
# at: 7:20 1.5
# code: E211
data y: real[N]
mu ~ MvNormal(zeros(3), eye(3))
for n in 1..N {
  y[n] ~ Normal(mu[1.5], 1)
}
