# Eight schools (Rubin 1981; Gelman et al., Bayesian Data Analysis §5.5): the effect of
# SAT coaching in J = 8 schools, each reported as an estimate y[j] with standard error
# sigma[j]. A hierarchical normal model partially pools the school effects theta[j]:
#
#   mu ~ Normal(0, sd=20)                         population mean effect
#   tau ~ Gamma(a0, b0)                           population PRECISION of the effects
#   theta[j] | mu, tau ~ Normal(mu, tau)          j = 1..J
#   y[j] | theta[j] ~ Normal(theta[j], sd=sigma[j])   known measurement error
#
# a0 = 1, b0 = 25: prior mean precision 0.04, i.e. effects spread by about 5 points.
#
# Data (eight_schools.csv, real): the published numbers y = 28, 8, -3, 7, -1, 1, 18, 12 and
# sigma = 15, 10, 16, 11, 9, 11, 10, 18, with a school column A..H (unused by the model).
#
# Inference: all vmp. theta's prior has mu as a mean (Normal–Normal) and tau as a precision
# (Normal–Gamma); y reads theta as its mean. theta is local (one per row), mu and tau global.
const a0 = 1.0
const b0 = 25.0

data y: real[J]
data sigma: real[J]

mu ~ Normal(0, sd=20)
tau ~ Gamma(a0, b0)
for j in 1..J {
  theta[j] ~ Normal(mu, tau)
  y[j] ~ Normal(theta[j], sd=sigma[j])
}
