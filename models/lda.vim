# Latent Dirichlet allocation (Blei, Ng & Jordan 2003), data in long format: one row per token.
#
#   theta[d] ~ Dirichlet(alpha * ones(K))      topic proportions of document d = 1..D
#   beta[k] ~ Dirichlet(eta * ones(V))         word distribution of topic k = 1..K
#   z[t] | theta ~ Categorical(theta[doc[t]])  topic of token t = 1..N
#   word[t] | z, beta ~ Categorical(beta[z[t]])
#
# K = 10 topics, alpha = 0.1, eta = 0.01. D (documents) and V (vocabulary) are the numbers
# of levels of the categorical columns doc and word.
#
# Data (lda.csv, real): the Reuters corpus shipped with the `lda` package on PyPI
# (lda.datasets.load_reuters()): the first 100 documents restricted to the 500 words most
# frequent in them, 12160 tokens; `doc` is the document number, `word` the word string.
#
# Inference: all conjugate, vmp: Categorical–Dirichlet for z → theta and word → beta, z as a
# mixture selector in word's likelihood. z (one per token) and theta (one per document) are
# local and depend on each other, so they form a local block, an SSMF candidate (stochastic
# structured mean field); beta is global.
const K = 10
const alpha = 0.1
const eta = 0.01

data doc: cat(D)[N]
data word: cat(V)[N]

for d in 1..D {
  theta[d] ~ Dirichlet(alpha * ones(K))
}
for k in 1..K {
  beta[k] ~ Dirichlet(eta * ones(V))
}
for t in 1..N {
  z[t] ~ Categorical(theta[doc[t]])
  word[t] ~ Categorical(beta[z[t]])
}
