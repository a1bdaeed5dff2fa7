"""What every rank-structured protocol shares: the global model built from its rank-local
steps (readable and compiled), collective completion, rank symmetry, the partial-order
reduction, and the soundness harness that vouches for the reductions."""
