# A group effect drawn once, without a loop, then read per group (`a[g[n]]`).
# at: 8:17 a[g[n]]
# code: E210
data g: cat(G)[N]
data y: real[N]
a ~ Normal(0, 1)
for n in 1..N {
  y[n] ~ Normal(a[g[n]], 1)
}
