"""Outputs: the encoder that turns any output structure (arrays of varying shape, mappings, sets,
fitted models) into numeric features and support facts for the statistics.
"""
