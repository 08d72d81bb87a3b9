"""Scan profiles: one module per library (:mod:`audit.scan.profiles.base` holds the pieces)."""

from __future__ import annotations

#: Library names ``miaudit scan`` knows, and the module holding each one's ``PROFILE``.
LIBRARIES = {"diffprivlib": "audit.scan.profiles.diffprivlib",
             "pure-ldp": "audit.scan.profiles.pure_ldp",
             "multi-freq-ldpy": "audit.scan.profiles.multi_freq_ldpy",
             "opendp": "audit.scan.profiles.opendp",
             "python-dp": "audit.scan.profiles.python_dp",
             "pipeline-dp": "audit.scan.profiles.pipeline_dp",
             "smartnoise-sql": "audit.scan.profiles.smartnoise_sql"}


def profile_for(target: str):
    """The :class:`~audit.scan.profiles.base.Profile` of a library name or of a user's module."""
    import importlib

    from audit.scan.profiles.user_module import user_profile

    if target in LIBRARIES:
        return importlib.import_module(LIBRARIES[target]).PROFILE
    return user_profile(target)
