# Latent Dirichlet allocation on a bag-of-words corpus: one row per (document, word) with the
# number of times the word occurs in the document. `count` weights the rows: row t stands for
# count[t] identical tokens, so this model is models/lda.vim on the same corpus expanded to one
# row per token (lda_counts.csv is lda.csv grouped by document and word: 7393 rows for 12160
# tokens), with the same ELBO and posterior at the same q (docs/tutorials/lda_counts.md).
#
#   theta[d] ~ Dirichlet(alpha * ones(K))      topic proportions of document d = 1..D
#   beta[k] ~ Dirichlet(eta * ones(V))         word distribution of topic k = 1..K
#   z[t] | theta ~ Categorical(theta[doc[t]])  topic shared by the count[t] tokens of row t
#   word[t] | z, beta ~ Categorical(beta[z[t]])
#
# Data (lda_counts.csv, real): the corpus of lda.csv (100 Reuters stories of the `lda` package,
# 500 words) grouped by document and word (models/make_data.py lda_counts).
#
# Inference: all conjugate, vmp, as in lda.vim; every message to theta and beta from row t and
# its ELBO term are multiplied by count[t], and so is the entropy of q(z[t]).
const K = 10
const alpha = 0.1
const eta = 0.01

data doc: cat(D)[N]
data word: cat(V)[N]
data count: weight[N]

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
