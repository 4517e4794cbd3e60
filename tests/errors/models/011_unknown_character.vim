# A character that is not part of the language.
# at: 6:31 μ
# code: E100
data y: real[N]
mu ~ Normal(0, 1)
for n in 1..N { y[n] ~ Normal(μ, 1) }
