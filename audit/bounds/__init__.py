"""Bounds and conversions between privacy notions, one module (or subpackage) per paper.

Where a paper's code lives: constructions and calibrations (what builds or tunes a mechanism,
and a mechanism's own exact privacy levels) are in :mod:`mechanisms`; bounds and conversions
between notions are here; the ``miaudit bounds`` calculators over them are in
:mod:`audit.cli.bounds_calculators`.

- :mod:`.pufferfish`, :mod:`.composition`: the Pufferfish/MI paper (Nuradha and Goldfeld);
- :mod:`.local_mi`: the local-MI paper (Ngo, Östman and Graell i Amat);
- :mod:`.pml`: the PML paper (Grosse, Saeidian, Oechtering and Skoglund);
- :mod:`.lip`: the LIP paper (Zamani, Sadeghi and Skoglund).
"""
