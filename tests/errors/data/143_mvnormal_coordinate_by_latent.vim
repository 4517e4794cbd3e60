# A coordinate of an MvNormal vector picked by a latent category (`w[z[t]]`): not a linear read.
# command: infer
# at: 9:31 w
# code: E500
const K = 2
data y: real[T]
w ~ MvNormal(zeros(K), eye(K))
for t in 1..T { z[t] ~ Categorical(ones(K) / K) }
for t in 1..T { y[t] ~ Normal(w[z[t]], 1.0) }
