"""Configuration: the TOML file and the flags — the key schema, flag values, loading a file and
building an :class:`~audit.spec.AuditSpec` from it, and the generated reference table.
"""
