# Data redefined with `=`.
# at: 5:1 y
# code: E234
data y: real[N]
y = 2.0
