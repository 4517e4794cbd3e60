# A misspelt variable; the hint names the right one.
# at: 8:17 muu
# code: E201
# hint: mu
data y: real[N]
mu ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Normal(muu, 1)
}
