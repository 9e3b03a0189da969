"""What several exercises' grading shares: random rows, the verify result dict, the sampler exercises' cases."""
