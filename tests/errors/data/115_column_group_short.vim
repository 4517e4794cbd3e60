# A column group with a declared width larger than the file has.
# at: column 'x3'
# code: E403
data X: real[N, 3] from x1..x3
data y: real[N]
w ~ MvNormal(zeros(3), eye(3))
for n in 1..N { y[n] ~ Normal(dot(w, X[n]), 1) }
