# A matrix of zeros as a precision.
# at: 8:23 zeros(D, D)
# code: E258
const D = 2
data x: real[N, D]
mu ~ MvNormal(zeros(D), eye(D))
for n in 1..N {
  x[n] ~ MvNormal(mu, zeros(D, D))
}
