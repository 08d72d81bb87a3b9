"""Audit configuration: a TOML file, ``--set key=value`` overrides and the flag form, all into one
:class:`~audit.spec.AuditSpec`.

Schema (every table optional except ``mechanism`` and ``audit``)::

    [mechanism]
    spec = "catalog:histogram_buggy"     # or "path/file.py:NAME" or "package.module:NAME"
    # params = {epsilon = 0.1}           # catalog parameters (also catalog:NAME?epsilon=0.1)
    name = "display name"                 # optional

    [prior]                               # or several [[priors]] tables (Θ); default: the catalog entry's
    spec = "builtin:bernoulli"            # builtin:bernoulli|gaussian|uniform, catalog:NAME, FILE.py:NAME
    n = 10                                # builtin priors: records
    k = 1                                 #                 attributes
    p = 0.5                               # bernoulli: P(1); gaussian: mean, std; uniform: low, high
    independent_rows = true               # user callables only: structure you vouch for
    discrete = false

    [audit]
    notion = "mi-dp"                      # mi-dp | smi-dp | mi-pp
    epsilon = 0.125                       # nats
    alpha = 0.05
    samples = 20000                       # databases per prior
    slices = 32
    records = "all"                       # or [0, 3] (DP notions)
    estimator = "dv"                      # dv | mine | nwj
    candidates = 1
    delta = 0.0                           # δ of the event-based DP bound
    event_runs = 20000
    prior_search = 0                      # DP notions: random two-point priors added to Θ
    seed = 0
    device = "auto"

    [secret]                              # mi-pp only
    g = "secrets.py:salary"               # g(dbs) -> (m, dg)
    w = "secrets.py:department"           # optional public part w(dbs) -> (m, dw)
    independent = false                   # g(X) and w(X) independent under every prior (you vouch)
    w_discrete = false

    [[pairs]]                             # optional, DP notions: neighbouring databases whose
    first = [[0.0], [1.0]]                # two-point priors join Θ (with prior_search > 0 a
    second = [[1.0], [1.0]]               # catalog mechanism's exposing pairs join too)

    [claim]                               # optional: what the mechanism claims, for cross-checks
    notion = "dp"                         # dp | ldp | mi-dp | mi-pp
    epsilon = 0.5
    delta = 0.0

    [critic]                              # optional: estimators.neural.CriticConfig fields
    max_steps = 2000

Relative file paths are read relative to the configuration file.
"""

from __future__ import annotations

import sys
from pathlib import Path

from estimators.neural import CriticConfig
from estimators.validation import InputError
from mechanisms.catalog import get_entry
from mechanisms.catalog.guarantee import Guarantee
from mechanisms.catalog.neighbouring_pair import NeighbouringPair
from mechanisms.loading import load_object
from mechanisms.priors import Prior, ProductBernoulli, ProductGaussian, UniformBox, UserPrior

from .frameworks import PufferfishFramework, SecretFunction, SecretPair
from .spec import AuditSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

AUDIT_KEYS = ("notion", "epsilon", "alpha", "samples", "slices", "records", "estimator", "candidates", "delta",
              "event_runs", "prior_search", "seed", "device")
BUILTIN_PRIORS = ("bernoulli", "gaussian", "uniform")


def load_config(path) -> dict:
    """Parse a TOML audit configuration; ``_base_dir`` records where relative paths start."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            config = tomllib.load(handle)
    except FileNotFoundError:
        raise InputError(f"argument 'CONFIG': no such file {str(path)!r}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"argument 'CONFIG': {str(path)!r} is not valid TOML: {exc}") from None
    config["_base_dir"] = str(path.resolve().parent)
    return config


def _parse_value(text: str):
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word is a string


def apply_overrides(config: dict, assignments) -> dict:
    """Apply ``--set table.key=value`` assignments (values in TOML syntax; bare words are strings)."""
    for assignment in assignments or ():
        if "=" not in assignment:
            raise InputError(f"argument '--set' must look like table.key=value, got {assignment!r}")
        key, text = assignment.split("=", 1)
        parts = key.strip().split(".")
        if not all(parts):
            raise InputError(f"argument '--set' has an empty key in {assignment!r}")
        table = config
        for part in parts[:-1]:
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise InputError(f"argument '--set': {'.'.join(parts[:-1])!r} is not a table")
        table[parts[-1]] = _parse_value(text.strip())
    return config


def _resolve(spec: str, base_dir: str | None) -> str:
    """Make the FILE part of FILE.py:NAME relative to the configuration's folder."""
    source, sep, name = spec.rpartition(":")
    if base_dir and source.endswith(".py") and not Path(source).is_absolute():
        return str(Path(base_dir) / source) + sep + name
    return spec


def _table(config: dict, name: str) -> dict:
    value = config.get(name, {})
    if not isinstance(value, dict):
        raise InputError(f"configuration entry '{name}' must be a table")
    return value


def _builtin_prior(kind: str, table: dict) -> Prior:
    try:
        n, k = int(table.get("n", 10)), int(table.get("k", 1))
    except (TypeError, ValueError):
        raise InputError("prior 'n' and 'k' must be integers") from None
    if kind == "bernoulli":
        return ProductBernoulli(table.get("p", 0.5), shape=(n, k))
    if kind == "gaussian":
        mean, std = table.get("mean", 0.0), table.get("std", 1.0)
        return ProductGaussian.iid_rows([mean] * k, [[std**2 if i == j else 0.0 for j in range(k)] for i in range(k)], n)
    return UniformBox(table.get("low", 0.0), table.get("high", 1.0), shape=(n, k))


def _prior(table: dict, base_dir, entry) -> Prior:
    spec = table.get("spec")
    if spec is None:
        if entry is None:
            raise InputError("configuration needs a [prior] with 'spec' (or a catalog mechanism, whose prior is the default)")
        return entry.prior
    if not isinstance(spec, str):
        raise InputError(f"prior 'spec' must be a string, got {spec!r}")
    if spec.startswith("builtin:"):
        kind = spec.split(":", 1)[1]
        if kind not in BUILTIN_PRIORS:
            raise InputError(f"prior 'spec': unknown builtin {kind!r}; choose from {', '.join(BUILTIN_PRIORS)}")
        return _builtin_prior(kind, table)
    if spec.startswith("catalog:"):
        return get_entry(spec.split(":", 1)[1]).prior
    loaded = load_object(_resolve(spec, base_dir), "--prior")
    if isinstance(loaded, Prior):
        return loaded
    return UserPrior(loaded, label=spec, independent_rows=bool(table.get("independent_rows", False)),
                     independent_columns=bool(table.get("independent_columns", False)),
                     discrete=bool(table.get("discrete", False)))


def _framework(table: dict, base_dir) -> PufferfishFramework | None:
    if not table:
        return None
    if "g" not in table:
        raise InputError("configuration table [secret] needs 'g' (FILE.py:NAME of g(dbs) -> (m, dg))")
    g = SecretFunction(f"g = {table['g']}", load_object(_resolve(table["g"], base_dir), "--secret"))
    if table.get("w") is None:
        return PufferfishFramework("user secret", (g,), description="the secret g with no public information")
    w = SecretFunction(f"w = {table['w']}", load_object(_resolve(table["w"], base_dir), "--public"),
                       always_discrete=bool(table.get("w_discrete", False)))
    pair = SecretPair(g, w, "always" if table.get("independent", False) else "unknown")
    return PufferfishFramework("user secret", (g,), (w,), (pair,), description="the secret g given the public w")


def _records(value):
    if value is None or value == "all":
        return None
    if isinstance(value, str):
        try:
            return tuple(int(v) for v in value.split(","))
        except ValueError:
            raise InputError(f"argument 'records' must be 'all' or comma-separated record indices, got {value!r}") from None
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,)


def _claim(table: dict):
    if not table:
        return None
    try:
        return Guarantee(table["notion"], float(table["epsilon"]), float(table.get("delta", 0.0)))
    except KeyError as exc:
        raise InputError(f"configuration table [claim] needs {exc.args[0]!r}") from None


def _pairs(config: dict, entry, searching: bool) -> tuple:
    tables = config.get("pairs", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise InputError("configuration entry 'pairs' must be an array of tables ([[pairs]]) with first and second")
    pairs = []
    for table in tables:
        if "first" not in table or "second" not in table:
            raise InputError("each [[pairs]] table needs 'first' and 'second' (databases as arrays of rows)")
        pairs.append(NeighbouringPair(table["first"], table["second"], why="supplied in the configuration"))
    if searching and entry is not None:
        pairs += list(entry.pairs)
    return tuple(pairs)


def build_spec(config: dict, *, quiet: bool = True) -> AuditSpec:
    """The :class:`AuditSpec` a configuration describes."""
    base_dir = config.get("_base_dir")
    mech_table = _table(config, "mechanism")
    spec = mech_table.get("spec")
    if not isinstance(spec, str):
        raise InputError("configuration needs [mechanism] spec = \"catalog:NAME\" or \"FILE.py:NAME\"")
    entry = None
    if spec.startswith("catalog:"):  # parameters: catalog:NAME?KEY=VALUE or [mechanism] params = {...}
        entry = get_entry(spec.split(":", 1)[1], mech_table.get("params"))
        mechanism, name = entry.mechanism, entry.name
    elif "params" in mech_table:
        raise InputError("[mechanism] params applies to catalog mechanisms only (spec = \"catalog:NAME\")")
    else:
        mechanism, name = load_object(_resolve(spec, base_dir), "--mechanism"), spec
    if "priors" in config:
        tables = config["priors"]
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise InputError("configuration entry 'priors' must be an array of tables ([[priors]])")
    else:
        tables = [_table(config, "prior")]
    priors = tuple(_prior(t, base_dir, entry) for t in tables)
    audit = _table(config, "audit")
    unknown = sorted(set(audit) - set(AUDIT_KEYS))
    if unknown:
        raise InputError(f"unknown key(s) in [audit]: {', '.join(unknown)}; known: {', '.join(AUDIT_KEYS)}")
    for required in ("notion", "epsilon"):
        if required not in audit:
            raise InputError(f"configuration needs [audit] {required}")
    claim = _claim(_table(config, "claim"))
    if claim is None and entry is not None:
        claim = entry.claimed
    critic_table = {k: tuple(v) if isinstance(v, list) else v for k, v in _table(config, "critic").items()}
    try:
        critic = CriticConfig(**critic_table)
    except TypeError as exc:
        raise InputError(f"configuration table [critic]: {exc}") from None
    settings = {k: audit[k] for k in AUDIT_KEYS if k in audit and k != "records"}
    pairs = _pairs(config, entry, bool(audit.get("prior_search", 0)))
    return AuditSpec(mechanism=mechanism, priors=priors, framework=_framework(_table(config, "secret"), base_dir),
                     pairs=pairs,
                     records=_records(audit.get("records")), claim=claim, critic=critic,
                     name=mech_table.get("name", name), quiet=quiet, **settings)
