# The occasionally dishonest casino (Durbin, Eddy, Krogh & Mitchison 1998, ch. 3): a hidden
# Markov model with categorical emissions over several sessions in one table.
#
#   pi ~ Dirichlet(ones(K))              state of the die at the start of a session
#   A[k] ~ Dirichlet(ones(K))            row k of the transition matrix
#   phi[k] ~ Dirichlet(ones(F))          face probabilities of state k
#   z[1] ~ Categorical(pi),  z[t] | z[t-1] ~ Categorical(A[z[t-1]])   within a session
#   roll[t] | z[t] ~ Categorical(phi[z[t]])
#
# K = 2 (fair, loaded), F = 6 faces. `@sequences(by=session)` restarts the chain at the first
# row of every session: there z[t] is drawn like z[1], from pi.
#
# Data (casino.csv, synthetic, see make_data.py): 12 sessions of 60..200 rolls, rows sorted by
# session then roll; the loaded die shows a six half of the time.
#
# Inference: q(z) is one discrete chain per session (forward-backward, all sessions at once);
# every edge is vmp.
const K = 2

data session: cat(S)[T]
data roll: cat(F)[T]

pi ~ Dirichlet(ones(K))
for k in 1..K {
  A[k] ~ Dirichlet(ones(K))
  phi[k] ~ Dirichlet(ones(F))
}
z[1] ~ Categorical(pi)
for t in 2..T {
  z[t] ~ Categorical(A[z[t-1]]) @sequences(by=session)
}
for t in 1..T {
  roll[t] ~ Categorical(phi[z[t]])
}
