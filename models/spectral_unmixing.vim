# Spectral unmixing with Poisson counts: a Dirichlet q in a non-conjugate factor.
#
#   pi ~ Dirichlet(ones(K))                                fractions of K = 3 known sources
#   count[n] | pi ~ Poisson(dot(pi, spectrum[n]))          n = 1..N energy bins
#
# spectrum[n, k] is the expected count of source k alone in bin n (known), so the rate of a
# bin is the fraction-weighted mixture of the sources' spectra.
#
# Data (spectral_unmixing.csv, synthetic): N = 60 bins; three Gaussian peaks (bins 15, 30, 45,
# sd 6) over a flat floor, 300 expected counts each; true pi = (0.6, 0.3, 0.1) (numpy
# default_rng(12)).
#
# Inference: the rate is LINEAR in pi, not log-linear, so no conjugate pattern matches and the
# analyzer uses cvi: the message to q(pi) is the gradient of E[log f] in the Dirichlet's mean
# parameters E[log pi_k], by a Fisher solve (Monte Carlo with normalised-Gamma draws for
# E[log rate], closed form with Sherman-Morrison for E[rate]).
const K = 3

data spectrum: real[N, K] from (s1, s2, s3)
data count: int[N]

pi ~ Dirichlet(ones(K))
for n in 1..N {
  count[n] ~ Poisson(dot(pi, spectrum[n]))
}
