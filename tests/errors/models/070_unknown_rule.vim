# A misspelt rule annotation.
# at: 6:19 @cvii
# code: E270
# hint: @cvi
data y: real[N]
mu ~ Normal(0, 1) @cvii
for n in 1..N { y[n] ~ Normal(mu, 1) }
