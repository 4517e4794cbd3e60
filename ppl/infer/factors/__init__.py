"""Factor runtimes: each computes its messages to its neighbours and its ELBO term."""
