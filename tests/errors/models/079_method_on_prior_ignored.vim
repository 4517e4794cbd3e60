# `--method` asking for the Jaakkola bound on a Normal prior.
# args: --method mu=jaakkola
# at: none
# code: E285
data y: real[N]
mu ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(mu, 1) }
