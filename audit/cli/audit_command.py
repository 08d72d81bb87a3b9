"""``miaudit audit``: audit a mechanism from a TOML configuration or from flags.

The flags that set configuration values come from :data:`audit.config.keys.KEYS` (a key with a
``flag`` gets it here), so a flag and its configuration key are type-checked by the same code
and named together in errors.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from audit.config.flag_values import StoreOnce, integer, number
from audit.config.building import build_spec
from audit.config.files import apply_overrides, load_config, override_key
from audit.config.hints import claim_form_error, claim_notion_error, split_claim_error
from audit.config.keys import PAIR_FLAGS, flag_keys
from estimators.validation import InputWarning
from audit.report import report_target, summary_table, terminal_text
from estimators.validation import InputError, check_positive
from mechanisms.claims.claim import CLAIM_SYNTAX
from mechanisms.claims.parsing import parse_claim
from mechanisms.errors import MechanismError, MechanismWarning
from mechanisms.inputs.pair_files import split_pair_flag
from mechanisms.inputs.relation import check_relation


def configure(parser) -> None:
    parser.add_argument("config", nargs="?", metavar="CONFIG.toml", help="audit configuration (see the README)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a configuration value, e.g. --set audit.epsilon=0.2 (repeatable; "
                             "values in TOML syntax: true, 0.5, \"text\", [0, 3])")
    parser.add_argument("--report", metavar="OUT.html", action=StoreOnce,
                        help="OUT.html: the HTML report with OUT.md and OUT.json beside it; OUT.md or OUT.json: "
                             "that report alone (the location is checked before the audit)")
    for key in flag_keys():
        if not key.flag_added_elsewhere:
            parser.add_argument(key.flag, **key.flag_options())
    parser.add_argument("--claim", metavar="NOTION:PARAMS", action=StoreOnce,
                        help=f"the privacy claim to audit: {CLAIM_SYNTAX} (default for a catalog mechanism: its own)")
    parser.add_argument("--fail-on-violation", action="store_true",
                        help="exit with status 1 when the claim is refuted or an MI violation is certified by an MI "
                             "test with a share of alpha (any, without a claim; 0 otherwise, 2 for usage errors): an "
                             "audit can gate CI at type-I error alpha")
    parser.add_argument("--pair", action="append", metavar="A.npy,B.npy",
                        help="DP notions: a neighbouring pair of databases (n, k) whose two-point prior joins Θ; "
                             "pairs alone make a DP audit (repeatable; [[pairs]] first, second)")
    parser.add_argument("--max-runs", type=integer, action=StoreOnce, metavar="N",
                        help="a sequential audit: nested looks at growing parts of one stream of at most N mechanism "
                             "runs, stopping at the first refutation, alpha spent across the looks (audit.gating.sequential)")
    parser.add_argument("--time-limit", type=number, action=StoreOnce, metavar="S",
                        help="with --max-runs: run no look, the first included, predicted to end past S seconds")
    parser.add_argument("--plan", action="store_true",
                        help="plan, do not audit: run a small pilot and say which tests can refute the claim, the "
                             "runs each needs at --excess and at the pilot's effect, and how long they take")
    parser.add_argument("--excess", type=float, default=None, metavar="X",
                        help="--plan: the stated excess, a true privacy parameter X above the claim's (default 0.2)")
    parser.add_argument("--pilot-runs", type=int, default=None, metavar="N",
                        help="--plan: mechanism runs of the pilot (default 3000)")
    # None means "not given": the configuration file's value, if any, then the default applies. --device comes
    # from its key (audit.config.keys), checked by the schema: a value it refuses is one line, no usage block.
    parser.set_defaults(seed=None)


def _check_set_against_flags(assignments, flags: dict) -> None:
    """Refuse a ``--set`` of a key its own flag also gives: one of the two would silently win."""
    for assignment in assignments or ():
        parts = override_key(assignment)
        if len(parts) == 2 and parts[1] in flags.get(parts[0], {}):
            flag = next((key.flag for key in flag_keys() if (key.table, key.name) == tuple(parts)), "its flag")
            raise InputError(f"argument '--set' {assignment!r}: [{parts[0]}] {parts[1]} is also given by {flag}; "
                             "give it once")


def _flag_config(args) -> dict:
    """The configuration the flags describe (only the flags that were given)."""
    config: dict = {}
    for key in flag_keys():
        value = getattr(args, key.dest, None)
        if value is None or value is False:
            continue
        config.setdefault(key.table, {})[key.name] = value
    if args.pair:
        # Flags name files from the current folder, not from a configuration file's.
        config["pairs"] = [{"first": str(Path(first).absolute()), "second": str(Path(second).absolute())}
                           for first, second in map(split_pair_flag, args.pair)]
        config[PAIR_FLAGS] = list(args.pair)  # errors name each pair's files as typed
    if args.claim is not None:  # "" too: parse_claim names it
        relation = config.get("claim", {}).get("relation")
        if relation is not None:  # replace:1 is replace-one; a relation that is none is named here, as --relation
            relation = check_relation(relation, "--relation")
        try:
            claim = parse_claim(args.claim, argument="--claim", relation=relation)
        except InputError:  # a claim in another form (dp=1, eps:1, dp:1,1e-5): say the form it means
            raise claim_form_error(args.claim, "--claim", args.epsilon) or sys.exc_info()[1] from None
        _warn_epsilon_beside_claim(args.epsilon, claim, args.claim)
        # With --relation, the relation the user named goes along (config.building keeps a library's otherwise).
        config["claim"] = claim if relation is None else (claim, relation)
    return config


def _warn_epsilon_beside_claim(epsilon, claim, typed: str) -> None:
    """Warn when ``--epsilon`` repeats an ε-DP claim's ε: --epsilon is the MI level audited beside the claim, in
    nats, not the claim's ε (which the claim gives already), so the user most likely meant the claim alone."""
    if epsilon is None or claim.notion not in ("dp", "ldp") or epsilon != claim.parameters().get("epsilon"):
        return
    try:
        implied = f" at the {claim.implied_mi_budget(claim.default_audit_notion).value:g} nats it implies"
    except InputError:  # a budget that needs the records' support: the claim's default level, unnamed
        implied = " at the level it implies"
    warnings.warn(f"--epsilon {epsilon:g} is the MI level audited beside the claim, in nats, not the claim's ε, which "
                  f"--claim {typed} gives already (alone it audits {claim.default_audit_notion.upper()}{implied}); drop "
                  "--epsilon unless you mean that MI level", InputWarning, stacklevel=2)


def _merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


_default_showwarning = warnings.showwarning


def _show_input_warning(message, category, filename, lineno, file=None, line=None):
    """Input warnings as one line on stderr; any other warning as Python shows it."""
    if issubclass(category, (InputWarning, MechanismWarning)):
        from audit.report.plain_words import cited_by_year  # the paper by authors and year, as the output names it

        print(f"miaudit audit: warning: {cited_by_year(terminal_text(str(message)))}", file=sys.stderr)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


#: The head of the terminal's list of the tests that did not refute the claim (each with its bound and detail).
OTHER_TESTS_HEADER = "tests that did not refute the claim:"


def headline_lines(result) -> list:
    """The lines the terminal summary (:func:`_text`) and ``miaudit demo`` lead a result with: the claim's
    headline (:func:`audit.report.content.claim_headline`), under it, indented, the words the reports write under
    it too (:func:`audit.report.content.headline_explanations`: what to check, a float-bit refutation's fix, the
    event's symbols); ``[]`` without a claim."""
    from audit.report.content import claim_headline, headline_explanations

    if result.claim is None:
        return []
    return [claim_headline(result)] + [f"  {words}" for words in headline_explanations(result)]


def _text(result, encoding: str = "", printed_before=()) -> str:
    """The terminal summary: one headline about the claim (its verdict, the deciding bound, the pair and the
    event), under it what to check (plainly, for an output that never varied), a float-bit refutation's fix, what
    the event's symbols mean, each refuting test's evidence (its symbols explained in words where first used:
    :func:`audit.report.plain_words.explain_symbols`), the outputs seen on one database only, then what the verdict
    means and how α was split (each said once); the MI notion's table and statement, labelled as also tested with
    its role among the claim's tests; the runs in one line (:func:`audit.report.plain_words.runs_line`); the claim's
    other tests, and the notes that change what to do."""
    from audit.report.content import TEST_NAMES, action_notes, mi_part
    from audit.report.plain_words import (claim_test_form, cited_by_year, dp_bounds_words, explain_symbols,
                                          outputs_lines, runs_line)

    said: set = set()  # the symbols explained so far
    lines, refuted = headline_lines(result), []
    if result.claim is not None:
        # Each test by the name the headline gives it (float-bit event test, not "float test"), said once.
        for r in result.refuted_by:
            name = TEST_NAMES.get(r["test"], f"{r['test']} test")
            form, detail = claim_test_form(name, r["detail"])
            under = f" under {r['relation']}" if r.get("relation") else ""
            refuted.append(f"  refuted by the {name}{under} ({form + ', ' if form else ''}α = {r['alpha_spent']:.3g}): "
                           + detail)
        lines += explain_symbols(refuted, said)
        lines += outputs_lines(result.event_test)
        # The headline said the verdict and the lines above the evidence: this says what they mean, and the α split.
        # The headline names the claim and its neighbours; where the claim came from (a conversion, a catalog entry, a
        # library's statement) is said here, unless it is the --claim the user typed.
        origin = result.claim.get("origin")
        source = f"The claim {result.claim['label']} comes from {origin}. " if origin and origin != "--claim" else ""
        lines.append(source + result.claim_explanation(evidence=False))
    # Each line is one line whatever the user's names hold: a newline in a mechanism's name must
    # not forge a line of the verdict.
    lines = [terminal_text(line, keep_newlines=False) for line in lines] + ([""] if lines else [])
    mi_heading, mi_role = mi_part(result)
    # The table's "DP ε lower bounds" cell is said in words on the line under it, as other symbols are where first shown.
    bounds_words = dp_bounds_words(result)
    lines += [summary_table(result)] + ([f"  {bounds_words}"] if bounds_words else [])
    # Beside a claim the DP ε lower bounds are in the table and the tests' lines: the MI line leaves them out.
    lines += ["", terminal_text((f"{mi_heading}: {mi_role}. " if mi_heading else "")
                                + result.mi_statement(dp_bounds=result.claim is None), keep_newlines=False),
              runs_line(result)] + ([terminal_text(encoding, keep_newlines=False)] if encoding else [])
    # The refuting tests' evidence is above, and the MI line states the MI test's part (under both relations, the
    # shown relation's MI test's: mi_part): the tests that did not refute the claim are listed here.
    shown = None if result.relations is None else (result.relations.get("relation") or result.relations["tested"][0])
    others = []
    for check in result.cross_checks:
        on_mi_line = mi_heading and check.test == "mi" and check.relation in (None, shown)
        if not check.certified_contradiction and not on_mi_line:
            name = TEST_NAMES.get(check.test, f"{check.test} test")
            form, detail = claim_test_form(name, check.detail)
            others.append(terminal_text(f"- {name} of {check.claim}" + (f" ({form})" if form else "")
                                        + f": {_check_status(check)} ({detail})", keep_newlines=False))
    # Headed, as the notes are: a bare bullet under the run count reads as part of it.
    # "Other" would misname the test whose bound a not-refuted headline shows: it is listed here in detail too.
    lines += ([OTHER_TESTS_HEADER] + explain_symbols(others, said)) if others else []
    # A note the terminal printed before any run ("before running: …") is not printed again.
    notes = [note for note in action_notes(result) if note not in printed_before]
    if notes:
        lines += ["notes:"] + [terminal_text(f"- {note}", keep_newlines=False) for note in notes]
    # Papers are named by their authors and year, as the MI line names them.
    return cited_by_year("\n".join(lines))


def _add_next_step(exc, seed) -> None:
    """Add to the one line of a user's function that raised on an audit sample what to do next: which database
    that is, how to draw it again and see it, and the fixes (:func:`audit.report.plain_words.failing_input_step`);
    a statistic's error, or a call that did not return in time, keeps its words."""
    from audit.report.plain_words import failing_input_step

    if type(exc) is not MechanismError or exc.timed_out or not exc.args:
        return
    name = exc.mechanism.split("'")[1] if exc.mechanism.count("'") >= 2 else exc.mechanism
    step = failing_input_step(str(exc), name.rsplit(":", 1)[-1], seed)
    if step:
        exc.args = (str(exc) + step, *exc.args[1:])


def _check_status(check) -> str:
    """REFUTED, not refuted, or (a test that spent no α on the claim) not a test of it."""
    if check.certified_contradiction:
        return "REFUTED"
    return "not refuted" if check.alpha_spent is not None else "not a test of the claim"


def _check_first_words(args) -> None:
    """Refuse, in one line with what to type, a claim's notion given as ``--notion`` (``--notion dp --epsilon 1``)
    and a claim typed as two words (``--claim dp 1``, whose second word would be read as the CONFIG file)."""
    error = claim_notion_error(args.notion, args.epsilon, args.delta, flags=True)
    if error is None and args.claim is not None and args.config and not Path(args.config).exists():
        error = split_claim_error(args.claim, args.config, args.epsilon)
    if error is not None:
        raise error


def run(args):
    if args.plan and (args.report is not None or args.time_limit is not None):
        raise InputError("--plan runs only a pilot: --report and --time-limit do not apply to it")
    for flag, value in (("--excess", args.excess), ("--pilot-runs", args.pilot_runs)):
        if value is not None and not args.plan:  # read by the plan alone: an audit would silently ignore it
            raise InputError(f"argument '{flag}' applies to --plan only (a plan's pilot); add --plan, or drop {flag}")
    report = report_target(args.report) if args.report is not None else None  # checked before any work ("" too)
    with warnings.catch_warnings():
        warnings.simplefilter("always", InputWarning)
        warnings.simplefilter("always", MechanismWarning)
        warnings.showwarning = _show_input_warning
        _check_first_words(args)
        config = load_config(args.config) if args.config else {}
        flags = _flag_config(args)
        _check_set_against_flags(args.set, flags)
        config = apply_overrides(_merge(config, flags), args.set)
        if not args.plan and args.max_runs is not None and args.max_runs < 1:
            raise InputError(f"argument '--max-runs' must be >= 1, got {args.max_runs}")
        if args.time_limit is not None:  # named by its flag, before any work (the sequential audit names 'time_limit')
            check_positive(args.time_limit, "--time-limit")
        # A sequential audit's budget: a catalog DP-SGD entry's trainer choice weighs the runs it will make.
        spec = build_spec(config, quiet=args.quiet or args.json, max_runs=None if args.plan else args.max_runs)
        if args.plan:
            return _plan(spec, args)
        if args.time_limit is not None and args.max_runs is None:
            raise InputError("--time-limit applies to a sequential audit: give --max-runs too")
        if args.max_runs is not None and spec.companion is not None:
            raise InputError("--max-runs: a sequential audit tests one neighbouring relation, and neither the claim nor "
                             "the mechanism states one (without --max-runs both are audited, at α/2 each); give "
                             "--relation replace-one or --relation add-remove")
        printed = _warn_unrefutable(spec, args.max_runs)
        try:
            if args.max_runs is not None:
                from audit.gating.sequential import run_sequential_audit  # torch loads only once the flags are checked

                progress = None if args.quiet or args.json else _progress
                sequential = run_sequential_audit(spec, args.max_runs, time_limit=args.time_limit, progress=progress)
                result = sequential.result
            else:
                from audit.engine import run_audit  # here: torch loads only once the flags and files are checked

                sequential, result = None, run_audit(spec)
        except MechanismError as exc:
            _add_next_step(exc, spec.seed)
            raise
    if report:
        report.write(result)
    from mechanisms.outputs.encoding import encoder_of
    from audit.report.plain_words import encoding_words

    # The names the encoder gave the outputs' parts in this process say how a dict or a tuple became numbers.
    text = _text(result, encoding=encoding_words(encoder_of(spec.mechanism)), printed_before=printed)
    if sequential is not None:
        text += "\n\n" + terminal_text(sequential.summary(), keep_newlines=False)
    if args.fail_on_violation and fails_gate(result):
        args.exit_status = 1  # audit.cli.main returns it after printing the result
    if args.report:
        text += f"\n\nreport: {args.report}"
    return (result.to_dict() if sequential is None else sequential.to_dict()), text


def fails_gate(result) -> bool:
    """Whether ``--fail-on-violation`` exits with status 1 for ``result``: the claim refuted, or an MI violation
    certified (not an estimate) by an MI test that spends a share of α.

    The exit status is one verdict, so its type-I error is the union of the rejections that set it: the claim's
    tests at their shares (``claim_alpha``, summing to α) and the MI verdict at the MI test's level. Without a claim
    that level is α; with one, the MI verdict counts only where the MI test has its share (``"mi"`` in
    ``claim_alpha``): its certificate is then the claim's MI test, at that share (against ``epsilon``, the claim's
    budget unless given). Where the MI test does not test the claim, its bound is a separate statement certified
    at α (:func:`audit.certificates.claim_tests.plan_claim_tests`), and letting it set the status too would give
    the gate a type-I error up to 2α (union bound: α for the claim's tests plus α for the MI certificate).
    """
    if result.refuted:
        return True
    mi_tested = result.claim is None or "mi" in (result.claim_alpha or {})
    return bool(result.violation and not result.estimate_only and mi_tested)


def _progress(line: str) -> None:
    print(f"miaudit audit: {terminal_text(line, keep_newlines=False)}", file=sys.stderr, flush=True)


def _warn_unrefutable(spec, max_runs) -> list:
    """Say on the terminal, before any run, which tests cannot refute the claim at this budget, and what a wide
    critic training will cost (:func:`cost_warnings`); returns the lines said (the notes do not say them again)."""
    import dataclasses

    from audit.gating.budget_forecast import unrefutable_warnings

    looks = ()
    if max_runs is not None:  # a sequential audit's last look, the largest, sets what can be refuted
        from audit.gating.sequential import look_schedule

        looks = look_schedule(spec, max_runs, float_runs=False)  # the float-bit test's runs: after the probe
        last = looks[-1]
        last_spec = dataclasses.replace(spec, samples=last.samples, event_runs=last.event_runs, alpha=last.alpha)
    else:
        last_spec = spec
    lines = unrefutable_warnings(last_spec) + cost_warnings(spec, looks)
    for line in lines:
        print(f"miaudit audit: before running: {terminal_text(line, keep_newlines=False)}", file=sys.stderr)
    return lines


def cost_warnings(spec, looks=()) -> list:
    """The cost lines of ``spec``'s audit: one when its full neural MI critics' input is wide
    (:func:`audit.critic_cost.wide_input_forecast`), else none (classifier critics train no network; where the
    outputs suit none, the audit says the cost of the neural critics it trains then:
    :func:`audit.critic_cost.fallback_critic_device`); sized on the declared priors (searched
    priors add critics of the same width). A sequential audit's planned ``looks``
    (:func:`audit.gating.sequential.look_schedule`) each train their own critics: the line gives their
    training together (:func:`audit.critic_cost.over_looks`)."""
    from audit.audit_plan import plan_audit
    from audit.critic_cost import over_looks, wide_input_forecast

    if not spec.priors:
        return []

    def plan_for(audited):
        return plan_audit(audited, [(prior, None) for prior in audited.priors])

    if looks:
        forecast = over_looks(spec, looks, plan_for)
        return [] if forecast is None else [forecast.line(looks[-1].samples)]
    forecast = wide_input_forecast(spec, plan_for(spec))
    return [] if forecast is None else [forecast.line(spec.samples)]


def _plan(spec, args):
    """``--plan``: the budget plan from a pilot (audit.gating.budget_forecast), nothing else run."""
    import dataclasses

    from audit.gating.budget_forecast import EXCESS, plan_budget

    # A claim stated for no relation (audit.both_relations): the plan is the replace-one audit's, at its α/2.
    spec = dataclasses.replace(spec, companion=None)
    plan = plan_budget(spec, budget_runs=args.max_runs, pilot_runs=args.pilot_runs,
                       excess=EXCESS if args.excess is None else args.excess)
    return plan.to_dict(), terminal_text(plan.text())
