"""Every configuration key: its table, type and range, the notions it applies to and its flag.

One schema serves the TOML file and the command line (:mod:`audit.config.schema`).
"""

from __future__ import annotations

import dataclasses

from estimators.choices import MI_CRITICS, OTHERS
from estimators.critic_config import NEURAL_ESTIMATORS, OUTPUT_RANGE_LIMITS, CriticConfig
from estimators.validation import InputError, plain_toml
from mechanisms.execution.runner import BACKENDS, MAX_TIMEOUT_S
from mechanisms.inputs.relation import RELATION_SYNTAX

from audit.certificates.claim_tests import ARITHMETICS
from audit.config.schema import Key, validate_table
from audit.search.prior_search import MAX_PRIOR_SEARCH
from mechanisms.claims.claim import AUDIT_NOTIONS as NOTIONS


DP_NOTIONS = ("mi-dp", "smi-dp")
BUILTIN_PRIORS = ("bernoulli", "gaussian", "uniform")


#: What each :class:`~estimators.neural.CriticConfig` field sets, for the configuration reference (its default is
#: added from the class).
CRITIC_HELP = {
    "architecture": "shallow: the Pufferfish paper's class G_ℓ(a), hidden ReLU units plus a linear skip "
                    "(Section VI-C); mlp: depth hidden layers of width hidden",
    "hidden": "ReLU units of each hidden layer",
    "depth": "architecture mlp: hidden layers",
    "learning_rate": "Adam's step size",
    "batch_size": "samples of one training step, at least 2; a training split with fewer is used whole",
    "max_steps": "training steps at most",
    "eval_every": "training steps between evaluations of the validation objective",
    "patience": "training ends after this many evaluations in which the critics' mean validation objective rose "
                "by no more than min_delta",
    "min_delta": "nats: the rise of the mean validation objective that patience waits for",
    "output_range": "[lo, hi]: every critic is bounded to this interval, which the certified bound needs; "
                    f"{OUTPUT_RANGE_LIMITS[0]:g} <= lo < 0 < hi <= {OUTPUT_RANGE_LIMITS[1]:g}",
    "split": "[train, validation, test]: fractions of the samples for training, early stopping and "
             "estimation / certification; positive, summing to 1",
    "project_a": "architecture shallow: after every step, project the weights onto the norm constraints of "
                 "G_ℓ(a) with this a (default: no projection)",
    "mine_rate": "MINE: rate of the moving average of E_Q[e^T], in (0, 1)",
    "max_critics_per_chunk": "critics trained together at most; more are trained chunk by chunk",
    "eval_shifts": "product samples of the point estimate: the test split's second variable (y; an audit's output) is "
                   "rolled by this many distinct cyclic shifts, pairing each sample's first variable with other "
                   "samples' second; more shifts average more product pairs, so the test split needs more samples "
                   "than this. The certified lower bound pairs disjoint halves of the test split instead and does "
                   "not depend on it",
}


def _critic_keys() -> tuple:
    """One key per :class:`~estimators.neural.CriticConfig` field, described by :data:`CRITIC_HELP` and the field's
    default; ranges are checked by the class."""
    kinds = {int: "int", float: "number", str: "string", tuple: "numbers", type(None): "number"}
    return tuple(Key("critic", f.name, kinds[type(f.default)],
                     length=len(f.default) if isinstance(f.default, tuple) else None,
                     help=CRITIC_HELP[f.name] + ("" if f.default is None else f" (default {plain_toml(f.default)})"))
                 for f in dataclasses.fields(CriticConfig))


#: Every configuration value: where it lives, its type and range, where it applies, its flag.
KEYS = (
    Key("mechanism", "spec", "spec", flag="--mechanism", metavar="SPEC",
        help="FILE.py:NAME, package.module:NAME or catalog:NAME"),
    Key("mechanism", "name", "string"),
    Key("mechanism", "command", "spec", flag="--command", flag_dest="program", metavar="\"PROGRAM ARGS\"",
        help="the mechanism is an external program: databases on stdin, outputs on stdout, seed in "
             "MIAUDIT_SEED (see the README)"),
    Key("mechanism", "wire", "choice", choices=("text", "npy"), flag="--wire",
        help="--command: wire format (default text)"),
    Key("mechanism", "timeout", "number", above=0, at_most=MAX_TIMEOUT_S, flag="--timeout", metavar="S",
        help="seconds one call of the mechanism or the prior (one chunk of databases), or of g or w, may take "
             "(default: 60 s for the first calls, then each later call 50 × its databases × the first calls' time a "
             "database, at least 60 s; a --command batch has its chunk's bound; a --statistic read after the runs, one "
             "call an output, the same rule)"),
    Key("mechanism", "per_database", "bool", flag="--per-database",
        help="the mechanism is a function of one database f(db, rng) -> output; outputs of any structure (arrays of "
             "any shape, mappings, sets of keys, fitted estimators, tuples) are encoded"),
    Key("mechanism", "domain", "any", notions=DP_NOTIONS, flag="--domain", metavar="LOW,HIGH|FILE",
        help="DP notions: the records' declared range: LOW,HIGH for every attribute (--domain=-5,5 for a negative LOW), "
             "L0,H0;L1,H1;... per attribute (empty ranges between semicolons are skipped), "
             "or a file holding either (or a .npy of shape (2,) or (k, 2)); pairs from it (its ends, a grid near "
             "them, duplicates, ...) are scored on pilot runs and the best joins the audit; an end may be inf or -inf, and a domain with an infinite end builds no pairs "
             "and is only checked against the audited records (default: the range a "
             "library object or the function's bounds=/range= arguments declare)"),
    Key("mechanism", "query", "spec"),
    Key("mechanism", "params", "any"),
    Key("mechanism", "sensitivity", "number", above=0),
    Key("mechanism", "delta", "number", above=0, below=1),
    Key("prior", "spec", "spec", flag="--prior", metavar="SPEC",
        help="FILE.py:NAME, builtin:bernoulli|gaussian|uniform or catalog:NAME "
             "(default for a catalog mechanism: its exposing prior)"),
    Key("prior", "n", "int", at_least=1, priors=BUILTIN_PRIORS, flag="--n", help="builtin prior: records per database (default 10)"),
    Key("prior", "k", "int", at_least=1, priors=BUILTIN_PRIORS, flag="--k", help="builtin prior: attributes per record (default 1)"),
    Key("prior", "p", "number", at_least=0, at_most=1, priors=("bernoulli",), flag="--p",
        help="builtin:bernoulli: P(entry = 1), in [0, 1] (default 0.5)"),
    Key("prior", "mean", "number", priors=("gaussian",), flag="--mean", help="builtin:gaussian: mean (default 0)"),
    Key("prior", "std", "number", above=0, priors=("gaussian",), flag="--std",
        help="builtin:gaussian: standard deviation, > 0 (default 1)"),
    Key("prior", "low", "number", priors=("uniform",), flag="--low", help="builtin:uniform: lower end (default 0)"),
    Key("prior", "high", "number", priors=("uniform",), flag="--high", help="builtin:uniform: upper end (> low; default 1)"),
    Key("prior", "independent_rows", "bool", priors=("user",), flag="--independent-rows",
        help="a FILE.py prior callable has independent rows (you vouch for it)"),
    Key("prior", "independent_columns", "bool", priors=("user",)),
    Key("prior", "discrete", "bool", priors=("user",)),
    Key("audit", "notion", "choice", choices=NOTIONS, flag="--notion"),
    Key("audit", "epsilon", "number", above=0, flag="--epsilon", metavar="E",
        help="audited MI level epsilon, nats (default with --claim: the MI budget the claim implies)"),
    Key("secret", "g", "spec", notions=("mi-pp",), flag="--secret", metavar="FILE.py:G",
        help="mi-pp: the secret g(dbs) -> (m, dg)"),
    Key("secret", "w", "spec", notions=("mi-pp",), flag="--public", metavar="FILE.py:W",
        help="mi-pp: the public part w(dbs) -> (m, dw)"),
    Key("secret", "independent", "bool", notions=("mi-pp",)),
    Key("secret", "w_discrete", "bool", notions=("mi-pp",)),
    Key("audit", "alpha", "number", above=0, below=1, flag="--alpha",
        help="type-I error of a violation verdict (default 0.05)"),
    Key("audit", "samples", "int", at_least=1, flag="--samples", help="databases per prior (default 20000)"),
    Key("audit", "slices", "int", at_least=0, flag="--slices", help="random slices per secret (default: 32 for --notion smi-dp, none otherwise)"),
    Key("audit", "records", "records", notions=DP_NOTIONS, flag="--records",
        help="DP notions: 'all' or comma-separated record indices"),
    Key("audit", "estimator", "choice", choices=NEURAL_ESTIMATORS),
    Key("audit", "mi_critic", "choice", choices=MI_CRITICS, notions=DP_NOTIONS, flag="--mi-critic",
        help="DP notions: the MI test's critics: auto (default: classifiers for a DP-family claim under two-point "
             "priors on neighbouring databases, else neural), neural, or classifier"),
    Key("audit", "others", "choice", choices=OTHERS, notions=DP_NOTIONS, flag="--others",
        help="DP notions: what each record's neural critic reads of the other records: records (default: all of "
             "them, as MI-DP conditions on them; n x k numbers) or sums (their column sums, k numbers; priors with "
             "independent rows only): a lower bound of the audited MI, equal to it where the mechanism reads the "
             "others through their sums (docs/how-to/mi-notions.md, 'Large databases')"),
    Key("audit", "arithmetic", "choice", choices=ARITHMETICS, flag="--arithmetic",
        help="float (default): audit the float64 outputs, by statistics that read no bits and by the float-bit "
             "statistics, each at its share of alpha; ideal: the real-arithmetic behaviour alone (outputs rounded "
             "to 32 significant bits, no float-bit statistic; docs/how-to/floating-point.md)"),
    Key("audit", "candidates", "int", at_least=1),
    Key("audit", "delta", "number", at_least=0, below=1, notions=DP_NOTIONS, flag="--delta",
        help="DP notions: delta of the event-based DP bound (default: the claim's delta, else 0)"),
    Key("audit", "event_runs", "int", at_least=0, notions=DP_NOTIONS, flag="--event-runs",
        help="DP notions: mechanism runs per neighbouring input for the event test, at most (a rate-ratio "
             "certificate makes a Poisson number within them; default: --samples)"),
    Key("audit", "statistic", "spec", notions=DP_NOTIONS, flag="--statistic", metavar="FILE.py:FN",
        help="DP notions: a statistic of one output, fn(output) -> number or vector, added to the event test's "
             "candidate statistics (chosen on held-out draws, certified on fresh runs like them; no extra alpha)"),
    Key("audit", "allow_nan", "bool", notions=DP_NOTIONS, flag="--allow-nan",
        help="DP notions: let --pair files, [[pairs]] and a prior's draws hold NaN (missing values), which reach the mechanism "
             "unchanged, and add pairs of a missing value next to present ones to a declared domain's families; "
             "NaN outputs become a value (0 where missing), and one more column for every 4 says which are missing"),
    Key("audit", "prior_search", "int", at_least=0, at_most=MAX_PRIOR_SEARCH, notions=DP_NOTIONS,
        flag="--prior-search", metavar="N",
        help=f"DP notions (Θ = all distributions): add N (at most {MAX_PRIOR_SEARCH}) distinct two-point priors "
             "on random neighbouring pairs (and a catalog mechanism's exposing pairs) to Θ"),
    Key("audit", "seed", "int", at_least=0, flag="--seed", flag_added_elsewhere=True),
    Key("audit", "device", "choice", choices=("auto", "cpu", "cuda"), meant=(("gpu", "cuda"),), flag="--device",
        help="where critics train: auto (default) the device their training is predicted to finish sooner on "
             "(the CPU for small ensembles; the choice and its prediction are in the notes), cpu or cuda"),
    Key("pairs", "first", "any", notions=DP_NOTIONS),
    Key("pairs", "second", "any", notions=DP_NOTIONS),
    Key("claim", "spec", "string"),
    Key("claim", "notion", "string"),
    Key("claim", "epsilon", "number"),
    Key("claim", "delta", "number", at_least=0),
    Key("claim", "rho", "number"),
    Key("claim", "order", "number"),
    Key("claim", "mu", "number"),
    Key("claim", "relation", "string", notions=DP_NOTIONS, flag="--relation", metavar="RELATION",
        help="DP-family claims: the neighbours the claim is stated for: replace-one (default; n fixed), add-remove "
             "(one record present or absent), or user-level replace:K / add-remove:K (up to K records: the claim "
             "holds for databases at distance <= K as stated; a library's per-record claim is read at distance K "
             f"or converted by group privacy); one of {RELATION_SYNTAX}. The audited pairs follow it unless "
             "--pair files say otherwise"),
    *_critic_keys(),
    Key("execution", "workers", "any", flag="--workers", metavar="N|auto",
        help="mechanism calls in parallel: 1 (default) in this process, N > 1 local worker processes, "
             "auto one per core"),
    Key("execution", "backend", "choice", choices=BACKENDS, flag="--backend",
        help="local (default) or ray: chunks of mechanism runs as Ray tasks (pip install 'miaudit[ray]')"),
    Key("execution", "ray_address", "string", flag="--ray-address", metavar="ADDR",
        help="--backend ray: address of an existing Ray cluster (default: start a local Ray instance)"),
    Key("execution", "chunk_size", "int", at_least=1, flag="--chunk-size", metavar="C",
        help="databases per mechanism call (default: 4096 for a catalog mechanism, else 256); the samples depend "
             "on it, not on the backend"),
    Key("execution", "retries", "int", at_least=0),
)

#: Top-level entries: tables, and arrays of tables (``[[priors]]``, ``[[pairs]]``).
TABLES = ("mechanism", "prior", "audit", "secret", "claim", "critic", "execution")
ARRAYS_OF_TABLES = {"priors": "prior", "pairs": "pairs"}
#: Where :func:`audit.config.files.load_config` records the configuration file's folder (relative paths start there).
BASE_DIR = "_base_dir"
#: Where the command line records each ``--pair`` as typed (``a.npy,b.npy``), one per ``[[pairs]]`` table it writes,
#: for errors that name the files the user typed (:mod:`audit.config.given_pairs`).
PAIR_FLAGS = "_pair_flags"
#: The configuration's private entries: what the command line and the file loader record, never a user's key.
PRIVATE_ENTRIES = (BASE_DIR, PAIR_FLAGS)


def keys_of(table: str) -> dict:
    """``name -> Key`` for one table."""
    return {key.name: key for key in KEYS if key.table == table}


def flag_keys() -> tuple:
    """The keys a command-line flag sets, in declaration order."""
    return tuple(key for key in KEYS if key.flag)


def array_of_tables(config: dict, name: str) -> list:
    """The tables of ``config``'s array of tables ``name`` (``[[priors]]``, ``[[pairs]]``); none where it is absent."""
    value = config.get(name, [])
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise InputError(f"configuration entry '{name}' must be an array of tables ([[{name}]])")
    return value


def check_value_types(config: dict) -> None:
    """Check the type and range of every key a configuration holds, table by table in the order written, before
    anything else is read from it: an error names the first wrong key the user wrote (``[audit] samples = "1000"``),
    not what the audit still lacks (a claim, a prior). Whether a key applies to the notion or the prior is checked
    once those are known (:func:`audit.config.building.build_spec`); tables that are not tables are left to it too."""
    for name, value in config.items():
        if name in TABLES and isinstance(value, dict):
            validate_table(value, keys_of(name), f"[{name}]")
        elif name in ARRAYS_OF_TABLES and isinstance(value, list):
            for number, entry in enumerate(value, start=1):
                if isinstance(entry, dict):
                    validate_table(entry, keys_of(ARRAYS_OF_TABLES[name]), f"[[{name}]] entry {number}")
