"""Audit configuration: a TOML file, ``--set table.key=value`` overrides and the flag form, all
into one :class:`~audit.spec.AuditSpec`.

Schema (every table optional except ``mechanism`` and ``audit``)::

    [mechanism]
    spec = "catalog:histogram_buggy"     # or "path/file.py:NAME" or "package.module:NAME"; the object may be
                                          # a batched callable, an OpenDP Measurement or a diffprivlib mechanism
    name = "display name"                 # optional
    query = "file.py:NAME"                # library mechanisms: query(db), a database's input to the library
    params = { epsilon = 1.0 }            # a diffprivlib class: its keyword arguments; a catalog mechanism:
                                          # its parameters (also spec = "catalog:NAME?epsilon=1.0")
    sensitivity = 1.0                     # an OpenDP measurement on an aggregate: the query's sensitivity
    delta = 1e-6                          # an OpenDP smoothed max-divergence: δ at which it is read
    command = "sh mech.sh 1"              # instead of spec: an external program (mechanisms.adapters.recognition)
    per_database = false                  # spec is f(db, rng) -> output of any structure (--per-database;
                                          # mechanisms/outputs/encoding.py)
    wire = "text"                         # command: text | npy
    timeout = 60                          # seconds one call (one chunk of databases; a command: one batch; g, w) may take

    [prior]                               # or several [[priors]] tables (Θ); default: the catalog entry's
    spec = "builtin:bernoulli"            # builtin:bernoulli|gaussian|uniform, catalog:NAME, FILE.py:NAME
    n = 10                                # builtin priors: records
    k = 1                                 #                 attributes
    p = 0.5                               # bernoulli: P(1); gaussian: mean, std > 0; uniform: low < high
    independent_rows = true               # FILE.py samplers only: structure you vouch for
    independent_columns = false
    discrete = false

    [audit]
    notion = "mi-dp"                      # mi-dp | smi-dp | mi-pp (default with a claim: mi-dp, mi-pp for mi-pp:EPS)
    epsilon = 0.125                       # nats (default with a claim: the MI budget it implies)
    alpha = 0.05
    samples = 20000                       # databases per prior
    slices = 32                           # default: 32 for smi-dp, none otherwise (audit.audit_plan)
    records = "all"                       # or [0, 3] (DP notions)
    estimator = "dv"                      # dv | mine | nwj (neural critics)
    mi_critic = "auto"                    # auto | neural | classifier (DP notions; audit.audit_plan)
    arithmetic = "float"                  # float | ideal (audit.statistics.arithmetic)
    candidates = 1
    delta = 0.0                           # DP notions: δ of the event-based DP bound (default: the claim's)
    event_runs = 20000                    # DP notions (default: samples; runs per input)
    prior_search = 0                      # DP notions: random two-point priors added to Θ (at most 1000)
    seed = 0                              # >= 0
    device = "auto"

    [secret]                              # mi-pp only
    g = "secrets.py:salary"               # g(dbs) -> (m, dg)
    w = "secrets.py:department"           # optional public part w(dbs) -> (m, dw)
    independent = false                   # g(X) and w(X) independent under every prior (you vouch)
    w_discrete = false                    # w takes finitely many values

    [[pairs]]                             # optional, DP notions: neighbouring databases whose
    first = [[0.0], [1.0]]                # two-point priors join Θ (with prior_search > 0 a
    second = [[1.0], [1.0]]               # catalog mechanism's exposing pairs join too); arrays
                                          # or .npy files; without a prior, the pairs alone are Θ

    [claim]                               # optional: what the mechanism claims (mechanisms/claims/claim.py)
    spec = "dp:0.5"                       # dp:EPS[:DELTA] zcdp:RHO rdp:ALPHA:EPS gdp:MU ldp:EPS mi-dp:EPS mi-pp:EPS
                                          # or notion = "zcdp" with its parameters by name (rho = 0.5)
    relation = "replace-one"              # add-remove, replace:K, add-remove:K (--relation); alone, it sets a library's claim's

    [critic]                              # optional: estimators.neural.CriticConfig fields
    max_steps = 2000

    [execution]                           # optional: where the mechanism runs (README: Running the mechanism)
    workers = 1                           # N > 1: N local worker processes; "auto": one per core
    backend = "local"                     # local | ray
    ray_address = "HEAD_IP:6379"          # ray: an existing cluster (default: start a local one)
    chunk_size = 256                      # databases per mechanism call (each chunk has its own seed; default:
                                          # 4096 for a catalog mechanism, else 256)
    retries = 2                           # times a failed chunk is run again

Relative file paths are read relative to the configuration file.

Every value is checked against :data:`KEYS` (one :class:`~audit.config.schema.Key` per line:
table, name, type, range or choices, the notions and priors it applies to, its flag). To add a
configuration value, add its line there; a key with a ``flag`` gets that command-line flag in
``miaudit audit`` automatically, and the value reaches :func:`build_spec` type-checked. Unknown
tables and keys, values of the wrong type (``independent = "false"``), and keys that do not apply
to the notion or the prior are errors naming the key, never silently ignored.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from estimators.critic_config import CriticConfig
from estimators.validation import InputError, InputWarning, plain_toml
from mechanisms.base import MechanismError
from mechanisms.claims.claim import CLAIM_SYNTAX, Claim
from mechanisms.claims.parsing import claim_from_table, parse_claim
from mechanisms.execution.runner import ExecutionSettings
from mechanisms.adapters.loading import load_object, resolve_spec
from mechanisms.adapters.recognition import load_mechanism
from mechanisms.inputs.priors import Prior, ProductBernoulli, ProductGaussian, UniformBox
from mechanisms.inputs.user_priors import UserPrior
from mechanisms.inputs.relation import ADD_REMOVE, REPLACE_ONE, check_relation, relation_kind, relation_words

from audit.config.schema import validate_table
from audit.frameworks import PufferfishFramework, SecretFunction, SecretPair
from audit.config.domain_pairs import domain_pairs, split_alpha_for_both, tests_both_relations, with_add_remove_companion
from audit.search.input_domain import check_priors_in_domain, parse_domain
from audit.search.prior_search import differing_record

from audit.config.given_pairs import given_pairs
from audit.config.hints import claim_form_error, claim_notion_error, mechanism_spec_error
from audit.config.keys import (ARRAYS_OF_TABLES, BASE_DIR, BUILTIN_PRIORS, DP_NOTIONS, KEYS, PRIVATE_ENTRIES, TABLES,
                               array_of_tables, check_value_types, keys_of)

if TYPE_CHECKING:  # for the annotations only: audit.spec loads torch and scipy (imported in _build_spec)
    from audit.spec import AuditSpec


def _absolute(spec: str, base_dir: str | None) -> str:
    """A FILE.py:NAME spec with its file made absolute (Ray workers do not run in this folder)."""
    spec = resolve_spec(spec, base_dir)
    source, sep, name = spec.rpartition(":")
    if source.endswith(".py"):
        return str(Path(source).resolve()) + sep + name
    return spec


def _source(table: dict, base_dir: str | None) -> str | dict:
    """How worker processes load the mechanism (:class:`mechanisms.execution.worker.MechanismReference`):
    its specification, or the whole [mechanism] table where more than the spec makes the mechanism
    (a library's query and parameters, a program, catalog parameters); file paths made absolute."""
    table = {key: value for key, value in table.items() if value is not None}
    for key in ("spec", "query"):
        if isinstance(table.get(key), str):
            table[key] = _absolute(table[key], base_dir)
    return table["spec"] if set(table) <= {"spec", "name", "timeout"} else table


def _named(label: str, error: InputError) -> InputError:
    """``error`` with ``label`` in front (a failing user function keeps its own class and name)."""
    if isinstance(error, MechanismError):
        return error
    return InputError(f"{label}: {error}")


def _check_top_level(config: dict) -> None:
    for name in config:
        if name in PRIVATE_ENTRIES or name in TABLES or name in ARRAYS_OF_TABLES:
            continue
        homes = [key.table for key in KEYS if key.name == name]
        hint = f"; did you mean [{homes[0]}] {name} (--set {homes[0]}.{name}=...)?" if homes else ""
        raise InputError(f"unknown configuration entry {name!r}; the tables are "
                         f"{', '.join(TABLES + tuple(ARRAYS_OF_TABLES))}{hint}")


def _prior_kind(spec, entry) -> str:
    if spec is None:
        return "catalog"
    if spec.startswith("builtin:"):
        kind = spec.split(":", 1)[1]
        if kind not in BUILTIN_PRIORS:
            raise InputError(f"[prior] spec (--prior): unknown builtin {kind!r}; choose from "
                             f"{', '.join('builtin:' + b for b in BUILTIN_PRIORS)}")
        return kind
    if spec.strip().lower() in BUILTIN_PRIORS:  # --prior bernoulli: the builtin without its prefix
        raise InputError(f"[prior] spec (--prior) {spec!r} names a builtin prior without its prefix: here --prior "
                         f"builtin:{spec.strip().lower()}")
    return "catalog" if spec.startswith("catalog:") else "user"


def _catalog_entry(name: str, label: str, params=None):
    """The catalog entry ``NAME[?KEY=VALUE&...]`` at ``params`` ([mechanism] params)."""
    from mechanisms.catalog import catalog_names, get_entry  # scipy: loaded only when an audit is built

    names = catalog_names()
    if name.partition("?")[0] not in names:
        raise InputError(f"{label}: no catalog mechanism {name!r}; choose from {', '.join(sorted(names))}")
    try:
        return get_entry(name, params)
    except InputError as exc:
        raise InputError(f"{label}: {exc}") from None


def _builtin_prior(kind: str, table: dict, where: str) -> Prior:
    n, k = table.get("n", 10), table.get("k", 1)
    if kind == "bernoulli":
        return ProductBernoulli(table.get("p", 0.5), shape=(n, k))
    if kind == "gaussian":
        std = table.get("std", 1.0)
        return ProductGaussian.iid_rows([table.get("mean", 0.0)] * k, std**2, n)
    low, high = table.get("low", 0.0), table.get("high", 1.0)
    if not low < high:
        raise InputError(f"{where} low and high (--low, --high) must satisfy low < high, got low = {plain_toml(low)}, "
                         f"high = {plain_toml(high)}")
    return UniformBox(low, high, shape=(n, k))


def _prior(raw: dict, where: str, base_dir, entry, notion: str, allow_nan: bool = False) -> Prior:
    spec = keys_of("prior")["spec"].check(raw["spec"], f"{where} spec (--prior)") if "spec" in raw else None
    if spec is None and entry is None:
        raise InputError(f"the audit needs the databases to try: a prior, {where} spec (--prior) = "
                         "builtin:bernoulli|gaussian|uniform, catalog:NAME or FILE.py:NAME (with --n records), or for a "
                         "DP claim neighbouring pairs, --pair A.npy,B.npy (only a catalog mechanism brings its own)")
    kind = _prior_kind(spec, entry)
    table = validate_table(raw, keys_of("prior"), where, notion=notion, prior_kind=kind)
    if kind in BUILTIN_PRIORS:
        try:
            return _builtin_prior(kind, table, where)
        except MemoryError:
            raise InputError(f"{where} n and k (--n, --k): databases of {table.get('n', 10)} x {table.get('k', 1)} "
                             "entries do not fit in memory") from None
    if kind == "catalog":
        return entry.prior if spec is None else _catalog_entry(spec.split(":", 1)[1], f"{where} spec (--prior)").prior
    loaded = load_object(spec, f"{where} spec (--prior)", base_dir=base_dir)
    declared = [name for name in ("independent_rows", "independent_columns", "discrete") if name in table]
    if isinstance(loaded, Prior):
        if declared:
            raise InputError(f"{where} {', '.join(declared)}: {spec!r} is a Prior object, which declares its own "
                             "structure; these keys apply to sampling functions only")
        return loaded
    return UserPrior(loaded, label=spec, independent_rows=table.get("independent_rows", False),
                     independent_columns=table.get("independent_columns", False),
                     discrete=table.get("discrete", False), allow_nan=allow_nan)


def _framework(raw: dict, base_dir, notion: str) -> PufferfishFramework | None:
    table = validate_table(raw, keys_of("secret"), "[secret]", notion=notion)
    if notion != "mi-pp":
        return None
    if "g" not in table:
        raise InputError("notion mi-pp needs a secret: --secret FILE.py:G or [secret] g = \"FILE.py:G\" "
                         "(g(dbs) -> (m, dg))" + (" to go with the public part --public ([secret] w)"
                                                  if "w" in table else ""))
    if "w" not in table:
        extra = [name for name in ("independent", "w_discrete") if name in table]
        if extra:
            raise InputError(f"[secret] {', '.join(extra)} describe{'s' if len(extra) == 1 else ''} the public part w; "
                             "give it with --public FILE.py:W or [secret] w, or drop them")
    g = SecretFunction(f"g = {table['g']}", load_object(table["g"], "[secret] g (--secret)", base_dir=base_dir))
    if "w" not in table:
        return PufferfishFramework("user secret", (g,), description="the secret g with no public information")
    w = SecretFunction(f"w = {table['w']}", load_object(table["w"], "[secret] w (--public)", base_dir=base_dir),
                       always_discrete=table.get("w_discrete", False))
    pair = SecretPair(g, w, "always" if table.get("independent", False) else "unknown")
    return PufferfishFramework("user secret", (g,), (w,), (pair,), description="the secret g given the public w")


def _claim(raw, notion: str) -> tuple:
    """(the claim of [claim] / --claim or None, the relation [claim] relation / --relation names or None).

    A [claim] table may hold ``relation`` alone: the relation of the library's or catalog's claim.
    """
    if isinstance(raw, Claim):
        return raw, None
    if isinstance(raw, tuple):  # (claim, relation) from --claim with --relation (audit.cli.audit_command)
        return raw
    if not raw:
        return None, None
    table = validate_table(raw, keys_of("claim"), "[claim]", notion=notion)
    relation = check_relation(table["relation"], keys_of("claim")["relation"].label) if "relation" in table else None
    if set(table) == {"relation"}:
        return None, relation
    try:
        return claim_from_table(table, where="[claim] (--claim)", origin="[claim]"), relation
    except InputError:  # a spec in another form (dp=1, dp:1,1e-5): say the form it means
        raise claim_form_error(table.get("spec"), "[claim] spec") or sys.exc_info()[1] from None


def _critic(raw: dict, notion: str) -> CriticConfig:
    table = validate_table(raw, keys_of("critic"), "[critic]", notion=notion)
    try:
        return CriticConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in table.items()}).validated()
    except InputError as exc:
        raise _named("[critic]", exc) from None


def _execution(raw: dict, notion: str, timeout: float | None) -> ExecutionSettings:
    table = validate_table(raw, keys_of("execution"), "[execution]", notion=notion)
    workers = table.get("workers", 1)
    if isinstance(workers, str) and workers.isdigit():
        workers = int(workers)  # from the flag
    if workers != "auto" and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InputError(f"{keys_of('execution')['workers'].label} must be a positive integer or \"auto\", "
                         f"got {plain_toml(workers)}")
    try:
        return ExecutionSettings(**{**table, "workers": workers}, timeout=timeout)
    except InputError as exc:
        raise _named("[execution]", exc) from None


def _warn_if_uncertifiable(spec) -> None:
    """Say why, and how to fix it, when a declared prior allows no certificate for any secret."""
    for prior in spec.priors:
        if not all(pair.strategy(prior) == "estimate-only" for _, pair in spec.secret_pairs()):
            continue
        if spec.notion == "mi-pp":
            why = ("the public part w is not declared independent of the secret g, nor discrete. If g(X) and "
                   "w(X) are independent under every prior, declare it with independent = true in [secret]; "
                   "if w takes finitely many values, with w_discrete = true")
        else:
            why = ("its records are not declared independent (nor its values discrete), so a record may depend "
                   "on the others. If the sampler draws records independently, declare it with "
                   "--independent-rows (independent_rows = true in [prior]); if its values are finitely many, "
                   "with discrete = true in [prior]")
        warnings.warn(f"no certificate is possible under the prior {prior.describe()}: {why}. Without it the "
                      "audit reports a point estimate only, with no error guarantee.", InputWarning, stacklevel=2)


def _with_library_claim(claim, loaded, relation: str | None) -> tuple:
    """The audit's claim (the user's, else the library's read at ``relation`` when given) and the notes
    saying where it came from."""
    notes = loaded.notes
    if claim is not None:
        if loaded.claim is not None:
            notes = (f"claim from --claim / [claim], overriding the {loaded.claim_note}",) + notes
            stated = loaded.claim.relation
            if relation is None and claim.relation != stated and claim.allows_add_remove:
                # The user's parameters, the library's neighbours: the claim overrides the numbers, not the relation.
                claim = dataclasses.replace(claim, relation=stated)
                notes = (f"the claim {claim.label} from --claim is read for the library's neighbours, which "
                         f"{relation_words(stated)} (--relation audits another relation)",) + notes
            elif relation is not None and relation != stated:
                _say_relation_change(stated, relation, "--relation")
        return claim, notes
    library_claim, note = loaded.claim_at(relation) if relation is not None else (loaded.claim, loaded.claim_note)
    if relation is not None and library_claim is None and loaded.claim is not None:
        raise InputError(f"[claim] relation (--relation) {relation}: {note}")
    if note:
        notes = (note,) + notes
    if library_claim is None:
        return None, notes
    return parse_claim(library_claim.text, argument=note or "the library's claim", origin=library_claim.source,
                       relation=library_claim.relation), notes


def _say_relation_change(stated: str, audited: str, why: str) -> None:
    """Print (as an :class:`InputWarning`) that the audited relation is not the one the library states its claim for."""
    warnings.warn(f"relation: the library states its claim for neighbours that {relation_words(stated)}; the audit's "
                  f"neighbours {relation_words(audited)}, as {why} says", InputWarning, stacklevel=3)


def _audit_relation(claim, relation_given: str | None, pairs_config: list) -> str:
    """The relation of the audited pairs: the pairs' own when [[pairs]] / --pair are given (row counts that
    differ: add-remove), else the claim's, else the one named (default replace-one)."""
    kinds = {pair.relation for pair in pairs_config}
    if len(kinds) > 1:
        raise InputError("[[pairs]] (--pair): give pairs of one relation per audit (same row counts: replace-one; "
                         "row counts that differ by one: add-remove), not both")
    if kinds:
        return kinds.pop()
    if claim is not None and relation_given is None:
        return claim.relation
    return relation_given or REPLACE_ONE


def _check_relation_has_claim(relation: str, relation_given: str | None, claim) -> None:
    """Refuse, naming ``--relation`` as the user typed it, an audit under a relation other than replace-one
    without a DP-family claim (the MI notions are defined for replace-one neighbours only).

    :class:`~audit.spec.AuditSpec` refuses it too, but names the audited pairs' relation, which a ``--pair`` of
    one replaced record read at ``add-remove:2`` turns into ``replace:2``: a relation the user never typed.
    """
    if relation_given is None or relation == REPLACE_ONE or (claim is not None and claim.has_profile):
        return
    read_as = "" if relation == relation_given else f" (the --pair files are read at that distance as {relation})"
    raise InputError(f"{keys_of('claim')['relation'].label} is {relation_given}: neighbours that "
                     f"{relation_words(relation_given)}{read_as}; the MI notions (--notion, --epsilon) are defined "
                     "for replace-one neighbours only, so another relation needs a DP-family claim to test (--claim "
                     f"dp:EPS, zcdp, rdp or gdp with --relation {relation_given}), or drop --relation")


def build_spec(config: dict, *, quiet: bool = True, max_runs: int | None = None) -> AuditSpec:
    """The :class:`~audit.spec.AuditSpec` of a configuration (:func:`_build_spec`), with the user code
    it loads (files, imports, a prior's first call) bounded by the configuration's ``--timeout``."""
    from mechanisms.calls.user_call import first_calls_bounded_by

    mechanism = config.get("mechanism") if isinstance(config, dict) else None
    with first_calls_bounded_by(mechanism.get("timeout") if isinstance(mechanism, dict) else None):
        return _build_spec(config, quiet=quiet, max_runs=max_runs)


def _build_spec(config: dict, *, quiet: bool = True, max_runs: int | None = None) -> AuditSpec:
    """The :class:`~audit.spec.AuditSpec` a configuration describes; every value is checked against :data:`KEYS`.

    ``max_runs``: the audit is a sequential one within that budget (``--max-runs``), which a catalog DP-SGD entry's
    trainer choice under ``--device auto`` weighs (:mod:`audit.config.trainer_device`); ``None``: a fixed audit.

    Raises
    ------
    InputError
        Naming the key (``[table] key``) and its flag for an unknown table or key, a value of
        the wrong type or out of range, a key that does not apply to the notion or the prior,
        or a missing required value.
    """
    from audit.spec import AuditSpec  # torch and scipy: loaded only when an audit is built

    if not isinstance(config, dict):
        raise InputError(f"argument 'config' must be a configuration table (a dict, as load_config returns), "
                         f"got {plain_toml(config)}")
    base_dir = config.get(BASE_DIR)
    _check_top_level(config)
    raw_audit = config.get("audit", {})
    if not isinstance(raw_audit, dict):
        raise InputError("configuration entry [audit] must be a table")
    notion_error = claim_notion_error(raw_audit.get("notion"), raw_audit.get("epsilon"), raw_audit.get("delta"), False)
    if notion_error is not None:  # notion = "dp": a claim's notion where an MI notion goes
        raise notion_error
    check_value_types(config)  # every key the user wrote, in their order, before what the audit still lacks
    # The claim: --claim / [claim], else the catalog entry's or the library's. With a claim the
    # notion and the MI level audited default to the claim's (AuditSpec resolves the level).
    claim, relation_given = _claim(config.get("claim", {}), None)
    given_notion = keys_of("audit")["notion"].check(raw_audit["notion"]) if "notion" in raw_audit else None

    mechanism_table = validate_table(config.get("mechanism", {}), keys_of("mechanism"), "[mechanism]",
                                     notion=given_notion)
    if "spec" not in mechanism_table and "command" not in mechanism_table:
        raise InputError("the audit needs a mechanism: --mechanism or [mechanism] spec = \"catalog:NAME\" or "
                         "\"FILE.py:NAME\" (or --command \"PROGRAM ARGS\")")
    # --domain / [mechanism] domain: the records' declared range (audit.search.input_domain), not the loader's.
    user_domain = mechanism_table.pop("domain", None)
    if user_domain is not None:
        user_domain = parse_domain(user_domain, keys_of("mechanism")["domain"].label, base_dir)
    spec = mechanism_table.get("spec", "")
    entry = loaded = None
    if spec.startswith("catalog:"):
        entry = _catalog_entry(spec.split(":", 1)[1], "[mechanism] spec (--mechanism)", mechanism_table.get("params"))
        mechanism, name = entry.mechanism, entry.name
    else:  # a batched callable, a library mechanism or a program (mechanisms.adapters.recognition)
        spec_error = None if "command" in mechanism_table else mechanism_spec_error(spec, base_dir)
        if spec_error is not None:  # f.py without its function, or count without its file
            raise spec_error
        loaded = load_mechanism(mechanism_table, base_dir)
        mechanism, name = loaded.mechanism, loaded.name
    if claim is None and entry is not None:
        claim = entry.claimed.as_claim(origin=f"catalog entry {entry.name}")
        # Under add/remove the entry is refused below, once its records are known, whatever its claim's notion.
        if claim is not None and relation_given is not None and relation_kind(relation_given) != ADD_REMOVE:
            from mechanisms.claims.conversion import convert_claim

            claim = convert_claim(claim, relation_given)
    notes = ()
    user_claim = claim
    if loaded is not None:
        claim, notes = _with_library_claim(claim, loaded, relation_given)

    for required in ("notion", "epsilon"):
        if required not in raw_audit and claim is None:
            raise InputError(f"the audit needs a claim to audit, --claim NOTION:PARAMS (e.g. --claim dp:1; "
                             f"{CLAIM_SYNTAX}) or [claim], or else {keys_of('audit')[required].label}")
    notion = given_notion or claim.default_audit_notion
    audit = validate_table(raw_audit, keys_of("audit"), "[audit]", notion=notion)
    audit["notion"] = notion
    if entry is not None and audit.get("device", "auto") != "auto":
        from mechanisms.training.torch_dpsgd import trainer_for_device

        # --device cpu or cuda routes a catalog DP-SGD entry to the batched torch trainer there (anything else is
        # returned as is), before any pilot of a declared domain runs it; "auto" is weighed on the built spec below.
        mechanism, trainer_note = trainer_for_device(mechanism, audit["device"])
        notes = notes + ((trainer_note,) if trainer_note is not None else ())

    pair_relation = relation_given or (claim.relation if claim is not None else None)  # a given pair's distance
    pairs_only = entry is None and "prior" not in config and "priors" not in config and bool(config.get("pairs"))
    if "priors" in config and "prior" in config:
        raise InputError("give the priors either as one [prior] table (or the --prior flags) or as [[priors]] "
                         "tables, not both")
    if "priors" in config:
        tables = array_of_tables(config, "priors")
        if not tables:
            raise InputError("configuration entry 'priors' must hold at least one [[priors]] table")
        places = [f"[[priors]] entry {number}" for number in range(1, len(tables) + 1)]
    else:
        tables, places = [config.get("prior", {})], ["[prior]"]
    if pairs_only:
        # Under DP, Θ is all distributions: the two-point priors on the pairs alone are a complete Θ.
        pairs = given_pairs(config, None, False, None, notion, pair_relation, user_domain)
        from mechanisms.inputs.pair_files import check_pairs_agree

        check_pairs_agree(pairs)
        priors = tuple(pair.prior() for pair in pairs)
    else:
        priors = tuple(_prior(t, where, base_dir, entry, notion, audit.get("allow_nan", False)) for t, where in zip(tables, places))
        for prior, where in zip(priors, places):  # the pairs come from its draws: none beyond the declared domain
            check_priors_in_domain((prior,), user_domain, f"{where} spec (--prior) against --domain",
                                   audit.get("seed") or 0)
    shape = priors[0].shape
    if any(p.shape != shape for p in priors):
        raise InputError(f"the [[priors]] must share one database shape, got {sorted({p.shape for p in priors})}")
    if notion == "smi-dp" and audit.get("slices", 1) < 1:
        raise InputError(f"{keys_of('audit')['slices'].label} must be >= 1 for notion smi-dp (it averages over "
                         "random slices)")
    records = audit.pop("records", None)
    if audit.get("statistic") is not None:  # FILE.py:FN, loaded here; AuditSpec attaches it
        from audit.statistics.user_statistic import UserStatistic

        # Its file made absolute: a worker process or Ray task loads it from there (MechanismReference).
        audit["statistic"] = UserStatistic.load(_absolute(audit["statistic"], base_dir), audit["statistic"])
    if records is not None and max(records) >= shape[0]:
        raise InputError(f"{keys_of('audit')['records'].label} must be record indices in [0, {shape[0]}) for "
                         f"databases of {shape[0]} records, got {plain_toml(list(records))}")
    if pairs_only:
        relation = _audit_relation(claim, relation_given, pairs)
        if records is None:  # under a pair's two-point prior only the record that switches can leak
            records = tuple(sorted({differing_record(pair) for pair in pairs}))
        pairs = ()
    else:
        pairs = given_pairs(config, entry, bool(audit.get("prior_search", 0)), shape, notion, pair_relation, user_domain)
        relation = _audit_relation(claim, relation_given, pairs)
    # The relation typed counts too: an entry's own (replace) pairs would otherwise set the audited one.
    add_remove = next((r for r in (relation, relation_given) if r is not None and relation_kind(r) == ADD_REMOVE), None)
    if entry is not None and add_remove is not None:  # it stopped on its first n − 1 record batch
        relation = add_remove
        mi_claim = claim is not None and not claim.allows_add_remove  # an MI notion: no add/remove claim exists
        raise InputError(f"{keys_of('claim')['relation'].label} is {relation}, but catalog:{entry.name} is built for "
                         f"databases of exactly {shape[0]} records (its neighbours: {entry.neighbouring}), and an "
                         "add/remove audit runs it on fewer"
                         + (f"; its claim {claim.text} is {claim.notion}, a notion defined for replace-one "
                            "neighbours only: audit it under replace-one (no --relation)" if mi_claim else
                            ": audit it under replace-one (no --relation) or write a FILE.py mechanism that takes "
                            "any number of records"))
    _check_relation_has_claim(relation, relation_given, claim)
    if loaded is not None and user_claim is None and claim is not None and claim.relation != relation:
        library_claim, note = loaded.claim_at(relation)  # the library's map at the pairs' distance, not converted
        if library_claim is not None and library_claim.relation == relation:
            _say_relation_change(claim.relation, relation, "the pairs' row counts (--pair)")
            claim, notes = _with_library_claim(None, loaded, relation)
    domain, execution = None, _execution({}, notion, mechanism_table.get("timeout"))
    both = tests_both_relations(mechanism, user_domain, claim, relation_given, entry, loaded, config, notion)
    notes = split_alpha_for_both(audit, notes) if both else notes  # α/2 per relation (audit.both_relations)
    # Pairs the auditor chooses from the mechanism's declared input domain (audit.config.domain_pairs).
    if (loaded is not None or user_domain is not None) and notion in DP_NOTIONS \
            and not (pairs_only and relation_kind(relation) == ADD_REMOVE):
        given = given_pairs(config, None, False, None, notion, pair_relation) if pairs_only else pairs
        added, domain_notes, domain = domain_pairs(mechanism, user_domain, priors, given, shape, relation, claim, audit,
                                                   name, execution)
        notes = tuple(notes) + domain_notes
        pairs = tuple(pairs) + tuple(added)
        if added and records is not None and 0 not in records:
            records = tuple(sorted(set(records) | {0}))
    framework = _framework(config.get("secret", {}), base_dir, notion)
    from mechanisms.training.torch_dpsgd import trainer_source  # --device cpu or cuda's trainer reaches the workers

    result = AuditSpec(mechanism=mechanism, priors=priors, framework=framework,
                       pairs=pairs, records=records, claim=claim, critic=_critic(config.get("critic", {}), notion),
                       notes=notes, name=mechanism_table.get("name", name), quiet=quiet,
                       execution=_execution(config.get("execution", {}), notion, mechanism_table.get("timeout")),
                       mechanism_source=trainer_source(_source(mechanism_table, base_dir), mechanism), relation=relation, domain=domain,
                       **audit)
    _warn_if_uncertifiable(result)
    result = with_add_remove_companion(result, user_domain, priors, shape, audit, name, execution) if both else result
    if entry is None or result.device != "auto":
        return result
    from audit.config.trainer_device import with_trainer

    # --device auto trains a catalog DP-SGD entry on the GPU where the audit's runs and its critics' training, the
    # GPU's start counted once for both, are predicted to finish sooner with it there (audit.config.trainer_device).
    return with_trainer(result, max_runs)
