# Bayesian Gaussian mixture (Bishop, PRML §10.2) on the Old Faithful geyser data.
#
#   pi ~ Dirichlet(alpha0 * ones(K))                  mixing weights
#   Lambda[k] ~ Wishart(nu0, W0)                      component precision matrices, E = nu0 * W0
#   mu[k] | Lambda[k] ~ MvNormal(m0, beta0 * Lambda[k])   MvNormal(mean, precision matrix)
#   z[n] | pi ~ Categorical(pi)                       component of eruption n
#   x[n] | z, mu, Lambda ~ MvNormal(mu[z[n]], Lambda[z[n]])
#
# K = 6, alpha0 = 0.001 (a small alpha0 lets VB switch off the components it does not need),
# beta0 = 1, nu0 = 2, W0 = I (eye(D)), m0 = 0 (zeros(D)).
#
# Data (gmm.csv, real): the Old Faithful data from R's datasets package (272 eruptions,
# columns eruptions and waiting, in minutes), each column STANDARDISED by its mean and
# population standard deviation (ddof = 0); see make_data.py.
#
# Inference: the classic conjugate-exponential model, every edge vmp: Dirichlet–Categorical
# for z, MvNormal–Wishart for mu's prior, and in the likelihood z is a mixture selector
# (responsibilities), mu a linear mean and Lambda a Wishart precision. z is local (one per
# row); pi, mu, Lambda are global. `@joint` keeps q(mu[k], Lambda[k]) as one Normal–Wishart
# factor, as in Bishop's VBEM; its bound on this data is -443.298 (two components survive).
# Without it, q(mu) q(Lambda) is fully factorised and the bound is lower (-446.96).
const K = 6
const alpha0 = 0.001
const beta0 = 1.0
const nu0 = 2.0

data x: real[N, D] from (eruptions, waiting)

pi ~ Dirichlet(alpha0 * ones(K))
for k in 1..K {
  Lambda[k] ~ Wishart(nu0, eye(D))
  mu[k] ~ MvNormal(zeros(D), beta0 * Lambda[k]) @joint
}
for n in 1..N {
  z[n] ~ Categorical(pi)
  x[n] ~ MvNormal(mu[z[n]], Lambda[z[n]])
}
