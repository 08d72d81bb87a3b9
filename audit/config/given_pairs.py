"""The neighbouring pairs an audit's configuration gives: ``[[pairs]]`` tables, of rows or of ``.npy`` files, and
``--pair A.npy,B.npy`` flags (which the command line writes as ``[[pairs]]`` tables of absolute file names).

Every error names the pair as the user gave it: ``--pair a.npy,b.npy`` as typed (:data:`PAIR_FLAGS`), else
``[[pairs]] entry N``.
"""

from __future__ import annotations

from pathlib import Path

from estimators.validation import InputError, plain_toml
from mechanisms.inputs.neighbouring_pair import checked_pair
from audit.config.keys import BASE_DIR, PAIR_FLAGS, array_of_tables, keys_of
from audit.config.schema import validate_table
from audit.search.input_domain import check_pair_in_domain

__all__ = ["given_pairs"]


def given_pairs(config: dict, entry, searching: bool, shape, notion: str, relation: str | None = None,
                domain=None) -> tuple:
    """The pairs ``config``'s ``[[pairs]]`` give, checked: neighbours under ``relation`` (default one record's
    distance), of the prior's database ``shape`` where one is known, inside the declared ``domain``; with
    ``searching`` a catalog ``entry``'s own pairs follow.

    Raises
    ------
    InputError
        Naming the pair as given (``--pair a.npy,b.npy``, ``[[pairs]] entry 2``) for a table without both
        databases, a file that cannot be read, databases that are not neighbours or not of ``shape``, a record
        outside ``domain``.
    """
    pairs, allow_nan = [], config.get("audit", {}).get("allow_nan") is True  # --allow-nan: missing values
    typed = config.get(PAIR_FLAGS) or ()
    for number, raw in enumerate(array_of_tables(config, "pairs"), start=1):
        where = f"[[pairs]] entry {number}"
        flag = f"--pair {typed[number - 1]}" if number <= len(typed) else None  # the pair as typed on the command line
        table = validate_table(raw, keys_of("pairs"), where, notion=notion)
        if "first" not in table or "second" not in table:
            raise InputError(f"{where} needs 'first' and 'second' (databases as arrays of rows, or .npy files)")
        first, second = table["first"], table["second"]
        named = flag or f"{where} (--pair)"
        if isinstance(first, str) and isinstance(second, str):
            base = Path(config.get(BASE_DIR) or ".")
            from mechanisms.inputs.pair_files import pair_from_files  # scipy, via the catalog

            pair = pair_from_files(base / first, base / second, flag or f"{where} first, second (--pair)", relation,
                                   allow_nan)
        else:
            for name, value in (("first", first), ("second", second)):
                if not isinstance(value, (list, tuple)):
                    raise InputError(f"{where} {name} must be an array of rows or a .npy file name, got {plain_toml(value)}")
            pair = checked_pair(first, second, f"{where} first, second", "supplied in the configuration", relation,
                                allow_nan)
        if shape is not None and pair.database_shape != shape:
            raise InputError(f"argument '{named}': first and second must have the prior's database shape "
                             f"{shape}, got {pair.database_shape}")
        pairs.append(check_pair_in_domain(pair, domain, f"{named} against --domain"))
    if searching and entry is not None:
        pairs += list(entry.pairs)
    return tuple(pairs)
