"""The figures of an audit report, drawn with matplotlib's Agg canvas and returned as PNG bytes.

Each figure function returns a :class:`ReportFigure`; when the result has nothing to draw
(no slices, no training history, no positive DP bound) the figure carries no image and a
sentence saying why, so the report states the absence instead of silently dropping it.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from audit.mi_statement import level_number
from audit.result import AuditResult
from audit.report.text import number

# At most this many curves get a legend entry; more would hide the plot.
MAX_LEGEND_ENTRIES = 10
# Secret names label the x axis up to this many secrets; beyond that, indices do.
MAX_NAMED_TICKS = 20


@dataclass(frozen=True)
class ReportFigure:
    """One figure of a report.

    Attributes
    ----------
    title : str
        What the figure shows.
    png : bytes or None
        The PNG image; ``None`` when there was nothing to draw.
    absent : str
        Why there is no image (empty when there is one).
    caption : str
        How to read the figure (empty when the title says it all).
    """

    title: str
    png: bytes | None
    absent: str = ""
    caption: str = ""


def _figure(width: float = 6.4, height: float = 3.6):
    # Figure + Agg canvas directly: no pyplot global state, safe in threads and headless.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.subplots()


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96)
    return buffer.getvalue()


def _epsilon_line(axes, result: AuditResult) -> None:
    if result.epsilon is None:  # no MI level was audited
        return
    axes.axhline(result.epsilon, color="tab:red", linestyle="--", linewidth=1.2,
                 label=f"ε = {level_number(result.epsilon)} {result.unit}")


def _secret_ticks(axes, names: list) -> None:
    positions = np.arange(len(names))
    if len(names) <= MAX_NAMED_TICKS:
        axes.set_xticks(positions, [_label(name, 20) for name in names], rotation=45 if len(names) > 4 else 0, ha="right" if len(names) > 4 else "center")
    else:
        axes.set_xlabel("secret index")


def per_record_figure(result: AuditResult) -> ReportFigure:
    """Per-secret point estimates and certified lower bounds against the ε line, coloured by prior."""
    title = "Per-secret estimates and certified lower bounds against ε"
    evidence = list(result.per_record)
    if not evidence:
        return ReportFigure(title, None, "The result lists no per-secret evidence.")
    figure, axes = _figure()
    priors = list(dict.fromkeys(e.prior for e in evidence))
    colors = [f"C{i % 10}" for i in range(len(priors))]
    confidence = f"{100 * (1 - result.alpha):.4g}%"
    for prior, color in zip(priors, colors):
        rows = [(i, e) for i, e in enumerate(evidence) if e.prior == prior]
        # One prior needs no legend entry of its own; several are told apart by colour.
        suffix = f" — {_label(prior)}" if len(priors) > 1 else ""
        x = np.array([i for i, _ in rows], dtype=float)
        estimates = np.array([e.estimate for _, e in rows], dtype=float)
        axes.plot(x, estimates, "o", color=color, label="point estimate" + suffix)
        certified = [(i, e.lower_bound, e.estimate) for i, e in rows if e.lower_bound is not None]
        if certified:
            idx, bounds, tops = map(np.array, zip(*certified))
            axes.vlines(idx, bounds, tops, color="tab:gray", linewidth=0.8)
            axes.plot(idx, bounds, "v", color=color, markerfacecolor="none",
                      label=f"per-secret certified bound ({confidence}, all at once)" + suffix)
    if result.lower_bound is not None:
        axes.axhline(result.lower_bound, color="tab:green", linestyle=":", linewidth=1.2,
                     label=f"certified bound behind the verdict ({number(result.lower_bound)})")
    _epsilon_line(axes, result)
    _secret_ticks(axes, [e.secret for e in evidence])
    axes.set_ylabel(f"leakage ({result.unit})")
    axes.legend(fontsize="small")
    caption = ("Per-secret bounds hold simultaneously for every secret and prior shown, so they can be looser "
               "than the bound behind the verdict, which certifies only the candidate(s) chosen on the "
               "validation split (union bound over those candidates).")
    return ReportFigure(title, _png(figure), caption=caption)


def _label(text, limit: int = 40) -> str:
    """User text as a matplotlib label: shortened, and with '$' escaped so it is never parsed as mathtext."""
    text = str(text)
    text = text if len(text) <= limit else text[:limit - 1] + "…"
    return text.replace("$", r"\$")


def per_slice_figure(result: AuditResult) -> ReportFigure:
    """The distribution of per-slice estimates of each secret that has them, against ε."""
    title = "Distribution of per-slice estimates"
    evidence = [e for e in result.per_record if e.per_slice is not None and len(e.per_slice)]
    if not evidence:
        return ReportFigure(title, None, "This audit recorded no per-slice values (no slices were used).")
    figure, axes = _figure()
    values = [np.asarray(e.per_slice, dtype=float) for e in evidence]
    axes.boxplot(values, positions=np.arange(len(values)), widths=0.6, medianprops={"color": "tab:blue"})
    axes.plot(np.arange(len(values)), [v.mean() for v in values], "D", color="tab:orange", markersize=4,
              label="mean over slices")
    _epsilon_line(axes, result)
    _secret_ticks(axes, [e.secret for e in evidence])
    axes.set_ylabel(f"per-slice estimate ({result.unit})")
    axes.legend(fontsize="small")
    return ReportFigure(title, _png(figure))


def training_curves(history, label: str = "") -> list:
    """Flatten a critic training history into ``(label, steps, values)`` curves.

    Accepts what the neural estimators record (``{"steps": [...], "validation_mean": [...]}``,
    or ``{"chunks": [...]}`` of those) and mappings or lists of such histories, labelled by
    their keys; a bare list of numbers is a curve over evaluation indices 0, 1, ….
    """
    if isinstance(history, dict):
        steps = history.get("steps")
        if steps is not None:
            series = {k: v for k, v in history.items()
                      if k != "steps" and isinstance(v, (list, tuple, np.ndarray)) and len(v) == len(steps)}
            return [(" ".join(p for p in (label, key) if p), np.asarray(steps, dtype=float), np.asarray(v, dtype=float))
                    for key, v in series.items()]
        curves = []
        for key, value in history.items():
            curves += training_curves(value, " ".join(p for p in (label, str(key)) if p))
        return curves
    if isinstance(history, (list, tuple, np.ndarray)) and len(history):
        if all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in history):
            values = np.asarray(history, dtype=float)
            return [(label, np.arange(len(values), dtype=float), values)]
        curves = []
        for i, item in enumerate(history):
            curves += training_curves(item, f"{label} {i + 1}".strip())
        return curves
    return []


def training_figure(result: AuditResult) -> ReportFigure:
    """Critic training curves (the validation objective at each evaluation)."""
    title = "Critic training curves"
    curves = [c for c in training_curves(result.training_history) if len(c[1])]
    if not curves:
        return ReportFigure(title, None, "The result carries no critic training history.")
    figure, axes = _figure()
    for i, (label, steps, values) in enumerate(curves):
        axes.plot(steps, values, linewidth=1.0, label=_label(label or "critic") if i < MAX_LEGEND_ENTRIES else None)
    axes.set_xlabel("training step")
    axes.set_ylabel(f"validation objective ({result.unit})")
    axes.legend(fontsize="small")
    return ReportFigure(title, _png(figure))


def dp_epsilon_figure(result: AuditResult) -> ReportFigure:
    """The certified DP ε lower bounds: from the MI bound (Pufferfish paper Thm 1) and the event test."""
    title = "Certified DP ε lower bounds"
    bars = [("not ε-DP: from certified MI (Thm 1)", result.dp_epsilon_lower_bound_mi),
            ("not ε-DP: from the event test", result.dp_epsilon_lower_bound_event)]
    if result.event_test is not None and result.event_test.epsilon_lower_bound_at_delta is not None:
        bars.append((f"not (ε, {result.event_test.delta:g})-DP: event test", result.event_test.epsilon_lower_bound_at_delta))
    bars = [(name, value) for name, value in bars if value is not None and value > 0]
    if not bars:
        return ReportFigure(title, None, "No positive DP ε lower bound was certified.")
    figure, axes = _figure(height=0.6 * len(bars) + 1.4)
    names, values = zip(*bars)
    axes.barh(np.arange(len(bars)), values, color="tab:purple")
    axes.set_yticks(np.arange(len(bars)), names)
    for i, value in enumerate(values):
        axes.annotate(number(value), (value, i), xytext=(3, 0), textcoords="offset points", va="center")
    axes.set_xlabel(f"certified lower bound on ε (at {100 * (1 - result.alpha):.4g}%)")
    axes.set_xlim(0, 1.2 * max(values))
    return ReportFigure(title, _png(figure))


def claim_tradeoff_figure(result: AuditResult) -> ReportFigure:
    """The claim's trade-off curve with the event test's certified point against it.

    Testing the second input against the first with the event E as rejection region has
    type-I error P(E | second) ≤ p̄ and type-II error 1 − P(E | first) ≤ 1 − p̲. Every mechanism
    with the claim keeps each test on or above the claim's trade-off curve f (Dong, Roth and
    Su 2022, Definition 2.1), so a certified point (p̄, 1 − p̲) below the curve refutes it.
    """
    title = "The claim's trade-off curve and the certified event"
    if result.claim is None:
        return ReportFigure(title, None, "The audit had no claim.")
    from mechanisms.claims.parsing import parse_claim

    claim = parse_claim(result.claim["text"], argument="claim")
    if not claim.has_profile:
        return ReportFigure(title, None, f"The claim {claim.label} has no trade-off curve: {claim.no_profile_reason}.")
    figure, axes = _figure(width=4.8, height=4.4)
    type_one = np.linspace(0.0, 1.0, 401)
    axes.plot(type_one, claim.tradeoff(type_one), color="tab:blue", label=f"{_label(claim.label)} trade-off curve")
    axes.fill_between(type_one, 0, claim.tradeoff(type_one), color="tab:blue", alpha=0.08,
                      label="impossible under the claim")
    axes.plot(type_one, 1 - type_one, color="tab:gray", linestyle=":", linewidth=0.8, label="random guessing")
    event = result.event_test
    caption = ("Type-I error P(E | second input) against type-II error 1 − P(E | first input) of the event test; "
               "the claim allows only points on or above its curve.")
    if event is not None:
        confidence = "" if event.alpha is None else f" ({100 * (1 - event.alpha):.4g}%)"
        axes.plot([event.p_second_upper], [1 - event.p_first_lower], "v", color="tab:red", markersize=8,
                  label="certified point" + confidence)
        axes.plot([event.p_second], [1 - event.p_first], "o", color="tab:orange", markersize=5,
                  label="observed frequencies")
    else:
        caption += " No event test ran in this audit, so no point is drawn."
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.set_xlabel("type-I error")
    axes.set_ylabel("type-II error")
    axes.legend(fontsize="small")
    return ReportFigure(title, _png(figure), caption=caption)


def audit_figures(result: AuditResult) -> list:
    """All figures of one audit's section, in report order (with a claim, its trade-off curve first)."""
    claim = [] if result.claim is None else [claim_tradeoff_figure(result)]
    return claim + [per_record_figure(result), per_slice_figure(result), training_figure(result),
                    dp_epsilon_figure(result)]
