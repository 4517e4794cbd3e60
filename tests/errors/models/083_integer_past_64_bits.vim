# An integer literal that does not fit in 64 bits.
# at: 4:15 9223372036854775808
# code: E215
const v = [1, 9223372036854775808]
mu ~ Normal(v[1], 1)
