# A negative constant index.
# at: 7:19 -1
# code: E213
data y: real[N]
w ~ MvNormal(zeros(3), eye(3))
for n in 1..N {
  y[n] ~ Normal(w[-1], 1)
}
