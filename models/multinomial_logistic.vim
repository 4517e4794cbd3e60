# Bayesian multinomial (softmax) logistic regression on Fisher's iris data.
#
#   w[k] ~ MvNormal(zeros(D), eye(D))                 k = 1..K: one weight vector per class
#   y[n] | w ~ Categorical(softmax(w @ x[n]))         w is K x D, x[n] a D-vector
#
# Data (multinomial_logistic.csv, real): scikit-learn's load_iris, 150 flowers. x holds an
# intercept column of ones and the four measurements (sepal_length, sepal_width,
# petal_length, petal_width, in cm before standardising), each standardised by mean and
# population sd (ddof = 0); y is the species name (setosa, versicolor, virginica), so K = 3
# and D = 5.
#
# Inference: the likelihood edge y → w is cvi: the softmax link is not conjugate to the
# Gaussian w and its K-dimensional expectation is estimated by Monte Carlo. The prior edge is
# vmp. w is global.
data x: real[N, D] from (intercept, sepal_length, sepal_width, petal_length, petal_width)
data y: cat(K)[N] from species

for k in 1..K {
  w[k] ~ MvNormal(zeros(D), eye(D))
}
for n in 1..N {
  y[n] ~ Categorical(softmax(w @ x[n]))
}
