# A Wishart prior's dof at most D − 1, D from the data's columns (the checker cannot see D).
# at: 6:18 nu0
# code: E258
const nu0 = 1.5
data x: real[N, D] from x1..x3
Lambda ~ Wishart(nu0, eye(D))
for n in 1..N {
  x[n] ~ MvNormal(zeros(D), Lambda)
}
