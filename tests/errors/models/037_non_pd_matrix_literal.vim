# A constant precision matrix that is symmetric but not positive-definite.
# at: 7:27 [[1, 2], [2, 1]]
# code: E258
const D = 2
data x: real[N, D]
for n in 1..N {
  x[n] ~ MvNormal([0, 0], [[1, 2], [2, 1]])
}
