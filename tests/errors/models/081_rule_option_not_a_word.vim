# A word option given a number.
# at: 7:48 2
# code: E272
data y: bool[N]
data X: real[N, D]
w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(X @ w)) @piecewise(kind=2)
