# `--method` naming a rule that does not exist.
# args: --method y=cvii
# at: none
# code: E282
data y: real[N]
mu ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(mu, 1) }
