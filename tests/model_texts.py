"""Small models several test files use as material (a mixture, a Markov chain, a logistic regression,
a softmax regression on three iris columns, LDA, a Normal–Gamma hierarchy), and `with_weight` to give one row weights."""

MIXTURE = """
const K = 6
const alpha0 = 0.001
const beta0 = 1.0
const nu0 = 2.0
data x: real[N, D] from (eruptions, waiting)
pi ~ Dirichlet(alpha0 * ones(K))
for k in 1..K {
  Lambda[k] ~ Wishart(nu0, eye(D))
  mu[k] ~ MvNormal(zeros(D), beta0 * Lambda[k])
}
for n in 1..N {
  z[n] ~ Categorical(pi)
  x[n] ~ MvNormal(mu[z[n]], Lambda[z[n]])
}
"""

CHAIN = """
data y: bool[T]
a ~ Normal(0, 1)
x[1] ~ Normal(0, 1)
for t in 2..T {
  x[t] ~ Normal(a * x[t-1], 10.0)
}
for t in 1..T {
  y[t] ~ Bernoulli(logistic(x[t])) @cvi(samples=10)
}
"""

# Bayesian logistic regression with a N(0, I) prior: the rules' common test bed
LOGISTIC = """
data X: real[N, D] from x1..xD
data y: bool[N]
w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(X @ w))"""

# the same likelihood over groups: a[g] ~ Normal(0, tau) and a slope; the last statement and its
# loop are left open for a rule annotation (append it, then "\n}")
LOGISTIC_HIERARCHY = """
data x: real[N]
data g: cat(G)[N]
data y: bool[N]
tau ~ Gamma(2.0, 2.0)
b ~ Normal(0, 1)
for k in 1..G {
  a[k] ~ Normal(0, tau)
}
for n in 1..N {
  y[n] ~ Bernoulli(logistic(a[g[n]] + b * x[n]))"""

IRIS_SOFTMAX = """
data x: real[N, D] from (intercept, sepal_length, sepal_width)
data y: cat(K)[N] from species
for k in 1..K {
  w[k] ~ MvNormal(zeros(D), eye(D))
}
for n in 1..N {
  y[n] ~ Categorical(softmax(w @ x[n]))
}
"""

LDA = """
const K = 4
data doc: cat(D)[N]
data word: cat(V)[N]
for d in 1..D { theta[d] ~ Dirichlet(0.1 * ones(K)) }
for k in 1..K { beta[k] ~ Dirichlet(0.01 * ones(V)) }
for t in 1..N {
  z[t] ~ Categorical(theta[doc[t]])
  word[t] ~ Categorical(beta[z[t]])
}
"""


def with_weight(text: str, line: str = "data count: weight[N]") -> str:
    """`text` with a row weight declared first."""
    return line + "\n" + text


# a Normal–Gamma hierarchy with a fixed effect: y[n] = a[g[n]] + w x[n] + noise
HIERARCHY = """
data g: cat(G)[N]
data x: real[N]
data y: real[N]
mu ~ Normal(0, 1)
tau ~ Gamma(2, 1)
noise ~ Gamma(2, 1)
w ~ Normal(0, 1)
for k in 1..G {
  a[k] ~ Normal(mu, tau)
}
for n in 1..N {
  y[n] ~ Normal(a[g[n]] + w * x[n], noise)
}
"""
