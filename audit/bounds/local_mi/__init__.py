"""Conversions of the local-MI paper (Ngo, Östman and Graell i Amat, Local Mutual-Information
Differential Privacy (arXiv:2405.07596v1, 2024)), **in bits**.

- :mod:`.binary`: binary-channel quantities (Eq. (7), the binary asymmetric channel);
- :mod:`.conversions`: LMIP ⇔ LDP (Theorem 1), LMIP ⇔ LIP (Theorem 2), Lemma 1.

The Gaussian mechanism's own LMIP and LIP levels are properties of a mechanism and live in
:mod:`mechanisms.constructions.gaussian_capacity` and :mod:`mechanisms.constructions.gaussian_discrete_input`; the σ that meets
a local-MI target is a calibration, :mod:`mechanisms.calibration.local_mi`.
"""
