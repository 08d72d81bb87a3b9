"""MI estimators: batched neural critics, sliced MI, classical baselines and result types."""
