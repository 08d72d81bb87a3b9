"""The profile of pure-LDP (1.2): its frequency oracles' and heavy hitters' clients, local randomizers of one item.

pure-LDP's clients are classes built with the privacy budget and the domain, whose ``privatise(item)``
is one client's report (``pure_ldp.frequency_oracles``: ``DEClient``, ``UEClient``, ``HEClient``,
``LHClient``, ``FastLHClient``, ``HadamardResponseClient``, ``HadamardMechClient``, ``CMSClient``,
``PCSClient``, ``SketchResponseClient``, ``RAPPORClient``; ``pure_ldp.heavy_hitters``: ``PEMClient``,
``TreeHistClient``, ``SFPClient``). Each claims ε-LDP at its ``epsilon``: any two items of one client, so
the pair is two items, the ends of the domain. The servers (``…Server``) aggregate the reports:
post-processing, not scanned.

- Items are 1, …, d (the clients' default ``index_mapper`` is ``x - 1``); the scan uses d = 4 and the pair
  1 vs 4. Heavy hitters privatise bit strings: 4 bits, the pair ``'0000'`` vs ``'1111'``. ``SFPClient`` reads
  its frequency oracle's ``sketch_based`` and fails on its default, None: it is given a ``CMSClient`` of the
  library's hash functions (:data:`SKETCH_CLIENT`; SFP sets its ε, half of its own to each of its two reports).
- Hash functions are the library's own, built as its servers build them (``pure_ldp.core.generate_hash_funcs``:
  seeds 0, 1, …), into a sketch of 16 cells; the Hadamard response's permutation (ε > 1) is one fixed
  permutation of the domain, as its server draws one. They are public in a deployment, fixed across reports.
- RAPPOR is parameterised by ``f``, not ε: the grid's ε is turned into ``f`` by the library's
  ``convert_eps_to_f`` and the claim is the library's ``convert_f_to_eps(f, k)`` (k = 1 hash function per
  cohort, a 16-bit Bloom filter), so the claim is the library's own; ``num_of_cohorts`` is left at its 8
  and given as 1 (a report's cohort is drawn and sent with it: over 8 cohorts a difference in the bits
  shows only jointly with the cohort).
- ``HadamardMechClient.privatise`` returns a list when it keeps the true coefficients and a ``zip`` iterator
  when it replaces them: the report is scanned as the server reads it (its items) together with its type,
  ``{type(report).__name__: list(report)}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from audit.scan.profiles.base import Expression, LocalRandomizer, OptionalArgument, Profile

#: The domain size d of the frequency oracles (items 1..d).
DOMAIN = 4
#: Cells of a sketch (CMS, PCS, sketch response) and bits of RAPPOR's Bloom filter.
CELLS = 16
#: The library's own hash functions (seeds 0 and 1) into CELLS cells, as its servers build them.
HASHES = f"__import__('pure_ldp.core').core.generate_hash_funcs(2, {CELLS})"
#: The items of the frequency oracles, and of the heavy hitters (4-bit strings).
ITEM, BITS = "int(db[0, 0])", "format(int(db[0, 0]), '04b')"


@dataclass(frozen=True)
class PureLDPClient(LocalRandomizer):
    """A pure-LDP client: ``Client(epsilon=…, …).privatise(item)``; for ``iterator_outputs``, the report as the
    server reads it with its type (module docstring)."""

    iterator_outputs: tuple = ()

    def call_source(self, obj, settings: dict) -> str:
        source = super().call_source(obj, settings)
        if getattr(obj, "__name__", "") in self.iterator_outputs:
            return f"(lambda report: {{type(report).__name__: list(report)}})({source})"
        return source


@dataclass(frozen=True)
class RapporClient(PureLDPClient):
    """RAPPOR's client (module docstring): ``f`` from the grid's ε by ``convert_eps_to_f``, the claim
    ``convert_f_to_eps(f, hashes)``."""

    epsilon_name: str = "f"
    hashes: int = 1

    def settings(self, obj, epsilons=(0.1, 1.0, 4.0)) -> list:
        grid = super().settings(obj, epsilons)
        for point in grid:
            point[self.epsilon_name] = obj.convert_eps_to_f(None, point[self.epsilon_name])
        return grid

    def claim(self, obj, settings: dict) -> str:
        return f"dp:{obj.convert_f_to_eps(None, settings[self.epsilon_name], self.hashes)!r}"


_ITEMS = dict(value_source=ITEM, bounds=(1.0, float(DOMAIN)))
#: The frequency oracle SFP's client reports its word and fragments through: a count-mean sketch client (its ε is
#: set by SFP, half of SFP's to each report; the 1.0 here is replaced).
SKETCH_CLIENT = Expression(f"__import__('pure_ldp.frequency_oracles').frequency_oracles.CMSClient(epsilon=1.0, "
                           f"hash_funcs={HASHES}, m={CELLS})")

PROFILE = Profile(
    name="pure-ldp",
    modules=("pure_ldp.frequency_oracles", "pure_ldp.heavy_hitters"),
    families=(
        RapporClient(requires=("f", "hash_funcs"), fixed={"m": CELLS, "hash_funcs": Expression(
            f"[[__import__('pure_ldp.core').core.generate_hash({CELLS}, cohort)] for cohort in range(8)]")},
            optional=(OptionalArgument("num_of_cohorts", (None, 1)),), **_ITEMS),
        # Apple's SFP needs a sketching frequency oracle for its word and fragments (pure-ldp reads its
        # ``sketch_based`` and fails on its default, None): a CMS client of the library's own hash functions
        PureLDPClient(requires=("max_string_length", "frag_client"), value_source=BITS, bounds=(0.0, 15.0),
                      fixed={"max_string_length": 4, "fragment_length": 1},
                      optional=(OptionalArgument("fo_client", (SKETCH_CLIENT,)),)),
        PureLDPClient(requires=("max_string_length",), value_source=BITS, bounds=(0.0, 15.0),
                      fixed={"start_length": 1, "max_string_length": 4, "fragment_length": 1}),
        PureLDPClient(requires=("l", "w", "hash_funcs"), fixed={"l": 2, "w": CELLS, "hash_funcs": Expression(
            f"list(zip({HASHES}, __import__('pure_ldp.core').core.generate_hash_funcs(2, 2)))")}, **_ITEMS),
        PureLDPClient(requires=("d", "hash_funcs"), fixed={"d": DOMAIN, "hash_funcs": Expression(
            f"np.random.default_rng(0).permutation({DOMAIN})")}, **_ITEMS),
        PureLDPClient(requires=("m", "hash_funcs"), fixed={"m": CELLS, "hash_funcs": Expression(HASHES)},
                      optional=(OptionalArgument("is_hadamard", (None, True)),), **_ITEMS),
        PureLDPClient(fixed={"d": DOMAIN, "k": 2, "t": 1}, iterator_outputs=("HadamardMechClient",),
                      optional=(OptionalArgument("use_oue", (None, True)), OptionalArgument("use_olh", (None, True)),
                                OptionalArgument("use_optimal_t", (None, True))), **_ITEMS),
    ),
    distribution="pure-ldp",
    exclude=("CMSServer", "DEServer", "FastLHServer", "HadamardMechServer", "HadamardResponseServer", "HEServer",
             "LHServer", "PCSServer", "RAPPORServer", "SketchResponseServer", "UEServer", "ZeroOracleServer",
             "ZeroOracleClient", "PEMServer", "SFPServer", "TreeHistServer"),
)
