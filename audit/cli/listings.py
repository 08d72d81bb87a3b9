"""Stored listings for the light commands: ``miaudit catalog`` and ``miaudit experiment --list``.

Listing the catalog computes every entry's guarantees (SciPy integrals, the DP-SGD entries'
accountants), and listing the experiments imports every experiment module (torch among
them): 1.7–1.9 s on a 2-core CPU for a table that only changes when the code does (issue 31
item 4). The default listings are therefore stored beside this module as JSON, written by
``python -m audit.cli.listings`` from the live computation, and a test checks that each stored
listing equals the live one (tests/test_light_commands.py), so a change to an entry or an
experiment that is not written here fails the test suite, not a user; an experiment module
added or removed since the listing was written makes the command list live. Anything else
(``catalog --name``, entries at other parameters, running an experiment) is computed live.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["LISTINGS", "live_listing", "stored_listing", "write_listings"]

_FOLDER = Path(__file__).resolve().parent

#: name -> stored file
LISTINGS = {"catalog": _FOLDER / "catalog_listing.json", "experiments": _FOLDER / "experiment_listing.json"}


def _experiment_modules() -> list:
    """The modules the experiment registry reads (experiments/*.py but ``_*``, registry, framework), unimported."""
    import importlib.util

    spec = importlib.util.find_spec("experiments")
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    names = {entry[:-3] for folder in folders for entry in os.listdir(folder) if entry.endswith(".py")}
    return sorted(n for n in names if not n.startswith("_") and n not in ("registry", "framework"))


def stored_listing(name: str):
    """The stored listing ``name``, or None when its file is missing or unreadable, or (experiments) when
    the experiment modules are not those it was written from: then the caller computes it live."""
    try:
        with open(LISTINGS[name], encoding="utf-8") as handle:
            stored = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or "rows" not in stored:
        return None
    if name == "experiments" and stored.get("modules") != _experiment_modules():
        return None  # a module was added or removed since: its EXPERIMENTS may be missing here
    return stored["rows"]


def live_listing(name: str):
    """The listing ``name`` computed from the code: the catalog's entries (DP-SGD's included) as their
    ``to_dict()``, or the registered experiments' name, description, source and ``trains``."""
    if name == "catalog":
        from estimators.result_forms import to_jsonable
        from mechanisms.catalog import catalog

        return json.loads(json.dumps(to_jsonable([e.to_dict() for e in catalog(training=True)]), allow_nan=False))
    if name == "experiments":
        from experiments.registry import experiments

        return [{"name": e.name, "description": e.description, "source": e.source, "trains": e.trains}
                for e in experiments()]
    raise KeyError(name)


def write_listings() -> None:
    """Write every stored listing from the live computation."""
    for name, path in LISTINGS.items():
        stored = {"rows": live_listing(name)}
        if name == "experiments":
            stored["modules"] = _experiment_modules()
        path.write_text(json.dumps(stored, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":  # pragma: no cover
    write_listings()
