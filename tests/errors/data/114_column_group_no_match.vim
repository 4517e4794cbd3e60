# A column group `x1..xD` with no matching columns.
# at: column 'x1'
# code: E403
data X: real[N, D] from x1..xD
data y: real[N]
w ~ MvNormal(zeros(D), eye(D))
for n in 1..N { y[n] ~ Normal(dot(w, X[n]), 1) }
