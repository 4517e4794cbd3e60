# Correlated topic model (Blei & Lafferty 2007), long format: one row per token.
# Topic proportions are the softmax of a Gaussian, whose precision matrix lets topics co-occur.
#
#   mu ~ MvNormal(zeros(K), eye(K))              mean of the topic logits
#   Lambda ~ Wishart(nu0, eye(K))                precision matrix of the logits, E = nu0 * I
#   eta[d] | mu, Lambda ~ MvNormal(mu, Lambda)   logits of document d = 1..D
#   beta[k] ~ Dirichlet(omega * ones(V))         word distribution of topic k
#   z[t] | eta ~ Categorical(softmax(eta[doc[t]]))
#   word[t] | z, beta ~ Categorical(beta[z[t]])
#
# K = 10, nu0 = 12 (> K - 1), omega = 0.01. Blei & Lafferty fit mu and the covariance by
# empirical Bayes; here they get a Normal–Wishart prior instead.
#
# Data (ctm.csv, real): a copy of lda.csv, the Reuters corpus of the `lda` package (first 100
# documents, 500 most frequent words, 12160 tokens).
#
# Inference: z → eta is laplace (Wang & Blei's Laplace VI: each document's q(eta[d]) is the
# full-covariance Gaussian at the mode of its expected log joint; `--method z=delta` for delta VI;
# the objective is not a bound). Every other edge is vmp: MvNormal–MvNormal and MvNormal–Wishart
# for eta's prior, Categorical–Dirichlet for beta, z as a mixture selector (variational EM).
# eta (per document) and z (per token) are local and linked: a local block (SSMF candidate).
const K = 10
const nu0 = 12.0
const omega = 0.01

data doc: cat(D)[N]
data word: cat(V)[N]

mu ~ MvNormal(zeros(K), eye(K))
Lambda ~ Wishart(nu0, eye(K))
for d in 1..D {
  eta[d] ~ MvNormal(mu, Lambda)
}
for k in 1..K {
  beta[k] ~ Dirichlet(omega * ones(V))
}
for t in 1..N {
  z[t] ~ Categorical(softmax(eta[doc[t]]))
  word[t] ~ Categorical(beta[z[t]])
}
