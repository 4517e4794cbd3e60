# A Binomial whose trials are computed from the successes it draws (successes + failures).
# at: 7:18 above
# code: E238
data above: int[N]
data below: int[N]
p ~ Beta(1, 1)
above ~ Binomial(above + below, p)
