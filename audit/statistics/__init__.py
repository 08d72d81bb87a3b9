"""Statistics: scores of outputs that separate two neighbouring inputs.

Classifier log-odds on the output features, support and float-bit codes, the logistic regression they
fit, the MI critics of the secrets, and the candidate pairs that carry a statistic to the search.
"""
