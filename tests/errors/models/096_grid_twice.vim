# Two `@grid` annotations: q is a mixture over one hyperparameter's grid.
# at: 6:19 @grid
# code: E760
data y: real[N]
tau ~ Gamma(2, 1) @grid
mu ~ Normal(0, 1) @grid
y ~ Normal(mu, tau)
