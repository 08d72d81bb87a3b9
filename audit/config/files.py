"""Reading an audit configuration: a TOML file (:func:`load_config`) and ``--set table.key=value`` overrides
(:func:`apply_overrides`), into the plain table that :func:`audit.config.building.build_spec` turns into an
:class:`~audit.spec.AuditSpec`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from estimators.validation import InputError, plain_toml

from audit.config.keys import BASE_DIR, PRIVATE_ENTRIES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["MAX_CONFIG_BYTES", "apply_overrides", "load_config"]

#: The largest configuration file read (a configuration is a few lines; more is a mistake).
MAX_CONFIG_BYTES = 2**20


def _misplaced_config(text: str) -> str | None:
    """The error for a positional argument that is a mechanism or a database rather than a TOML file (a flag
    forgotten, or ``--pair A.npy B.npy`` with a space), else None: TOML's own error would name only the parse."""
    source = text.rsplit(":", 1)[0] if ":" in text else text
    if text.startswith("catalog:") or source.endswith(".py"):
        return (f"argument 'CONFIG' must be a TOML configuration file, got {text!r}, which names a mechanism: "
                f"give it as --mechanism {text}" + ("" if ":" in text else ":FUNCTION"))
    if text.endswith(".npy"):
        return (f"argument 'CONFIG' must be a TOML configuration file, got {text!r}, a database file: a pair of "
                "databases is --pair A.npy,B.npy, the two files joined by a comma without a space")
    return None


def load_config(path) -> dict:
    """Parse a TOML audit configuration; :data:`BASE_DIR` records where relative paths start."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InputError(f"argument 'CONFIG' must be the path of a TOML file, got {plain_toml(path)}")
    misplaced = _misplaced_config(str(path))
    if misplaced is not None:
        raise InputError(misplaced)
    path = Path(path)
    where = f"argument 'CONFIG': {str(path)!r}"
    if path.is_dir():
        raise InputError(f"{where} is a folder, not a TOML file")
    if path.exists() and not path.is_file():  # a FIFO blocks, /dev/zero never ends
        raise InputError(f"{where} is not a regular file (a pipe or device?); give a TOML file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise InputError(f"{where} is larger than {MAX_CONFIG_BYTES // 2**20} MiB; an audit configuration is a "
                             "few lines of TOML")
        config = tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise InputError(f"argument 'CONFIG': no such file {str(path)!r}") from None
    except UnicodeDecodeError:
        raise InputError(f"{where} is not UTF-8 text (TOML files are UTF-8)") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where} is not valid TOML: {exc}") from None
    except RecursionError:  # the TOML parser recurses once per level of nested arrays or inline tables
        raise InputError(f"{where} nests arrays or tables too deeply to parse") from None
    except OSError as exc:
        raise InputError(f"{where} cannot be read: {exc.strerror or exc}") from None
    config[BASE_DIR] = str(path.resolve().parent)
    return config


def _parse_value(text: str):
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word is a string (and then fails the type check of a non-string key)
    except RecursionError:
        raise InputError(f"argument '--set': the value {text[:40]!r}… nests arrays or tables too deeply") from None


def override_key(assignment: str) -> list:
    """The key path of one ``--set table.key=value`` assignment (``["audit", "samples"]``), or one
    :class:`InputError` naming ``--set``."""
    if "=" not in assignment:
        raise InputError(f"argument '--set' must look like table.key=value, got {assignment!r}")
    parts = [part.strip() for part in assignment.split("=", 1)[0].strip().split(".")]
    if not all(parts):
        raise InputError(f"argument '--set' has an empty key in {assignment!r}")
    if parts[0] in PRIVATE_ENTRIES:
        raise InputError(f"argument '--set': {parts[0]!r} is not a configuration entry")
    return parts


def apply_overrides(config: dict, assignments) -> dict:
    """Apply ``--set table.key=value`` assignments (values in TOML syntax; bare words are strings); a key
    set twice is an error, as a flag given twice is (the second would silently win)."""
    seen: dict = {}
    for assignment in assignments or ():
        parts = override_key(assignment)
        text = assignment.split("=", 1)[1]
        earlier = seen.setdefault(tuple(parts), assignment)
        if earlier is not assignment:
            raise InputError(f"argument '--set' gives {'.'.join(parts)} more than once ({earlier!r}, then "
                             f"{assignment!r}); give it once")
        table = config
        for part in parts[:-1]:
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise InputError(f"argument '--set': {'.'.join(parts[:-1])!r} is not a table")
        table[parts[-1]] = _parse_value(text.strip())
    return config
