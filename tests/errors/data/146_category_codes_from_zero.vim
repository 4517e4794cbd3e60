# Integer category codes that count from 0 (party id 0..6, as many data sets code them).
# at: column 'party', row 2
# code: E409
data party: cat(K)[N]
data y: bool[N]
for k in 1..K {
  a[k] ~ Normal(0, 1)
}
for n in 1..N {
  y[n] ~ Bernoulli(logistic(a[party[n]]))
}
