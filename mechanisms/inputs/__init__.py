"""Inputs: priors over databases, neighbouring pairs and their files, and the neighbouring
relation with its presence column.
"""
