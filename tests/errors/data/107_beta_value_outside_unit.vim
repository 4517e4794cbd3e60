# A proportion of 1.2 for a Beta-distributed observation.
# at: column 'r', row 3
# code: E420
data r: real[N]
a ~ Gamma(1, 1)
for n in 1..N { r[n] ~ Beta(a, 1) }
