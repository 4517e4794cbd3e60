# `--method` naming a factor that does not exist.
# args: --method z=cvi
# at: none
# code: E283
data y: real[N]
mu ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(mu, 1) }
