# `@` of a [N, 2] matrix and a 3-vector.
# at: 7:5 X @ w
# code: E220
data X: real[N, 2] from x1..x2
data y: real[N]
w ~ MvNormal(zeros(3), eye(3))
m = X @ w
for n in 1..N { y[n] ~ Normal(m[n], 1) }
