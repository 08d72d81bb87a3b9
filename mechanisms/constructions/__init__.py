"""Constructions: mechanisms designed in the papers, with their closed forms — Gaussian capacity
(CI-LMIP), LIP by the SVD, PML-optimal kernels, MI-DP mean estimation.
"""
