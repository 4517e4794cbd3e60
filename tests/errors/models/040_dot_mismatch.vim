# dot of a 3-vector and a row of a 2-column matrix.
# at: 8:17 dot(w, x[n])
# code: E220
data x: real[N, 2] from x1..x2
data y: real[N]
w ~ MvNormal(zeros(3), eye(3))
for n in 1..N {
  y[n] ~ Normal(dot(w, x[n]), 1)
}
