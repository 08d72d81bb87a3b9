"""The four papers whose results the code implements, each cited in one short form.

Every user-visible ``source`` string that names one of them (catalog entries, ``miaudit bounds``
payloads, experiments) is built from these, as ``PAPER.cite("Theorem 1")``; docstrings write the
same short form out. The full references, with DOIs, are in ``docs/theorems.md``.

>>> LOCAL_MI.cite("Theorem 1(a), Eq. (6)")
'Ngo, Östman and Graell i Amat, Local Mutual-Information Differential Privacy (arXiv:2405.07596v1, 2024), Theorem 1(a), Eq. (6)'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LIP", "LOCAL_MI", "PML", "PUFFERFISH", "Paper"]


@dataclass(frozen=True)
class Paper:
    """A paper by its authors, title and where it appeared (venue or arXiv id, and year)."""

    authors: str
    title: str
    where: str

    @property
    def named(self) -> str:
        """Authors and title, for running text that gives the venue elsewhere."""
        return f"{self.authors}, {self.title}"

    def __str__(self) -> str:
        return f"{self.named} ({self.where})"

    def cite(self, part: str) -> str:
        """The short citation of ``part`` of the paper, e.g. ``"Theorem 1"`` or ``"Fig. 3 (Eq. (9))"``."""
        return f"{self}, {part}"


# The journal's name is written out: "Inf." would read as infinity where an output is checked for inf and NaN.
PUFFERFISH = Paper("Nuradha and Goldfeld", "Pufferfish Privacy: An Information-Theoretic Study",
                   "IEEE Transactions on Information Theory, 2023")
# Numbers (theorems, equations, figures) are those of v1; later versions are retitled.
LOCAL_MI = Paper("Ngo, Östman and Graell i Amat", "Local Mutual-Information Differential Privacy",
                 "arXiv:2405.07596v1, 2024")
PML = Paper("Grosse, Saeidian, Oechtering and Skoglund",
            "Dobrushin Coefficients of Private Mechanisms Beyond Local Differential Privacy", "arXiv:2601.09498, 2026")
LIP = Paper("Zamani, Sadeghi and Skoglund", "An Information Geometric Approach to Local Information Privacy with "
            "Applications to Max-lift and Local Differential Privacy", "arXiv:2501.11757, 2025")
