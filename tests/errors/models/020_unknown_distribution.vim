# A misspelt distribution; the hint names the right one.
# at: 6:7 Gama
# code: E250
# hint: Gamma
data y: real[N]
tau ~ Gama(1, 1)
for n in 1..N { y[n] ~ Normal(0, tau) }
