# Hierarchical logistic regression: one intercept and one slope per site, partially pooled
# through a Normal–Gamma hierarchy.
#
#   mu_a ~ Normal(0, 1),  tau_a ~ Gamma(1, 1)     population mean and PRECISION of intercepts
#   mu_b ~ Normal(0, 1),  tau_b ~ Gamma(1, 1)     the same for slopes
#   a[g] ~ Normal(mu_a, tau_a),  b[g] ~ Normal(mu_b, tau_b)     g = 1..G sites
#   y[n] ~ Bernoulli(logistic(a[site[n]] + b[site[n]] * x[n]))
#
# Data (hierarchical_logistic.csv, synthetic): 300 people at G = 6 sites labelled site_a ..
# site_f (a categorical column of strings; the levels are sorted labels), one covariate x and
# a binary outcome y; true a ~ N(-0.5, sd 1), b ~ N(1, sd 0.5) (numpy default_rng(4)).
#
# Inference: vmp and ncvmp side by side. The hierarchy (a, b given mu and tau) is conjugate,
# vmp; the likelihood reaches a and b through a logistic link, ncvmp. a and b are local (one
# per level of `site`), the hyperparameters global.
data site: cat(G)[N]
data x: real[N]
data y: bool[N]

mu_a ~ Normal(0, 1)
tau_a ~ Gamma(1, 1)
mu_b ~ Normal(0, 1)
tau_b ~ Gamma(1, 1)
for g in 1..G {
  a[g] ~ Normal(mu_a, tau_a)
  b[g] ~ Normal(mu_b, tau_b)
}
for n in 1..N {
  y[n] ~ Bernoulli(logistic(a[site[n]] + b[site[n]] * x[n]))
}
