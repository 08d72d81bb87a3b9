"""Black-box mechanisms, priors, noise calibrations, reference catalog, LIP/PML constructions."""
