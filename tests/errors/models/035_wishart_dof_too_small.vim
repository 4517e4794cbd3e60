# Wishart degrees of freedom 1 for a 3x3 matrix (must exceed D - 1 = 2).
# at: 6:18 1
# code: E258
const D = 3
data x: real[N, D]
Lambda ~ Wishart(1, eye(D))
for n in 1..N { x[n] ~ MvNormal(zeros(D), Lambda) }
