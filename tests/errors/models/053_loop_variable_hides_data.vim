# A loop variable named like a data variable.
# at: 6:5 y
# code: E230
data y: real[N]
data w: real[N]
for y in 1..N {
  w[y] ~ Normal(0, 1)
}
