# A ragged constant: rows of different lengths.
# at: 4:20 [3]
# code: E216
const v = [[1, 2], [3]]
mu ~ Normal(0, 1)
