# A `@joint` Normal–Wishart prior whose Wishart dof is at most D − 1, D from the data.
# command: infer
# at: 6:18 0.5
# code: E258
data x: real[N, D] from x1..x2
Lambda ~ Wishart(0.5, eye(D))
mu ~ MvNormal(zeros(D), 2.0 * Lambda) @joint
for n in 1..N {
  x[n] ~ MvNormal(mu, Lambda)
}
