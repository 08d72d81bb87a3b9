"""What to type instead: the one-line errors of a newcomer's common mistakes in ``miaudit audit``'s flags and
configuration, each naming the argument and the corrected value built from what the user typed.

- a claim's notion given as the audited MI notion (``--notion dp --epsilon 1``: :func:`claim_notion_error`);
- a claim written in another form (``dp=1``, ``dp 1``, ``eps:1``, ``dp:1,1e-5``, ``(1, 1e-5)-DP``, ``1``:
  :func:`corrected_claim`, :func:`claim_form_error`);
- a mechanism named without its file or without its function (``count``, ``f.py``: :func:`mechanism_spec_error`).

Nothing here runs user code: a file's functions are read from its syntax tree (:mod:`ast`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from estimators.validation import InputError
from mechanisms.claims.claim import AUDIT_NOTIONS, CLAIM_SYNTAX

__all__ = ["claim_form_error", "claim_notion_error", "corrected_claim", "mechanism_spec_error", "split_claim_error"]

#: The written forms of a claim's notion that name no MI notion, read as the claim notion they mean.
_CLAIM_NOTION_NAMES = {
    "dp": "dp", "ldp": "ldp", "zcdp": "zcdp", "rdp": "rdp", "gdp": "gdp",
    "approx-dp": "dp", "approxdp": "dp", "adp": "dp", "pure-dp": "dp", "puredp": "dp", "eps-dp": "dp",
    "epsilon-dp": "dp", "ε-dp": "dp", "(ε,δ)-dp": "dp", "(eps,delta)-dp": "dp", "(epsilon,delta)-dp": "dp",
    "ε,δ-dp": "dp", "eps,delta-dp": "dp", "local-dp": "ldp", "zero-concentrated-dp": "zcdp", "renyi-dp": "rdp",
    "rényi-dp": "rdp", "gaussian-dp": "gdp", "f-dp": "gdp", "mu-gdp": "gdp", "μ-gdp": "gdp",
}
#: Each claim notion's written form, with the parameter an MI level's --epsilon can fill in (ε of dp and ldp).
_CLAIM_FORMS = {"dp": "dp:EPS", "ldp": "ldp:EPS", "zcdp": "zcdp:RHO", "rdp": "rdp:ALPHA:EPS", "gdp": "gdp:MU"}
#: Names of ε that stand for an ε-DP claim (``eps:1`` is ``dp:1``).
_EPSILON_NAMES = ("eps", "epsilon", "e", "ε", "pure")


def claim_notion_error(notion: str, epsilon, delta, flags: bool) -> InputError | None:
    """The error for a claim's notion (``dp``, ``zcdp``, ``(ε,δ)-dp``, ...) given as the audited MI notion
    (``--notion`` or ``[audit] notion``), else ``None``.

    ``epsilon`` and ``delta`` (``--epsilon``, ``--delta``, or ``None``) fill in the claim the user meant:
    ``--notion dp --epsilon 1`` is ``--claim dp:1``. ``flags``: say it in flags, else in TOML keys.
    """
    if not isinstance(notion, str) or notion in AUDIT_NOTIONS:
        return None
    claim_notion = _CLAIM_NOTION_NAMES.get(re.sub(r"\s+", "", notion.lower()).replace("_", "-"))
    if claim_notion is None:
        return None
    form = "dp:EPS:DELTA" if claim_notion == "dp" and delta else _CLAIM_FORMS[claim_notion]
    example = form
    if claim_notion in ("dp", "ldp") and epsilon is not None:
        example = f"{claim_notion}:{_number(epsilon)}" + (f":{_number(delta)}" if claim_notion == "dp" and delta else "")
    notions = ", ".join(AUDIT_NOTIONS[:-1]) + " or " + AUDIT_NOTIONS[-1]
    if flags:
        dropped = " and --epsilon" if epsilon is not None else ""
        return InputError(f"argument '--notion': {notion!r} is a claim's notion, and --notion picks the MI notion to "
                          f"audit ({notions}); to check a {claim_notion.upper()} claim give --claim {form} instead of "
                          f"--notion{dropped}: here --claim {example}")
    return InputError(f"[audit] notion (--notion): {notion!r} is a claim's notion, and [audit] notion picks the MI "
                      f"notion to audit ({notions}); to check a {claim_notion.upper()} claim write it in [claim]: "
                      f"here [claim] spec = \"{example}\" (and no [audit] notion"
                      + (" or epsilon)" if epsilon is not None else ")"))


def _number(value) -> str:
    """A number as the user would type it: ``1`` for 1.0, ``1e-05`` for 1e-5."""
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def corrected_claim(text: str, epsilon=None) -> str | None:
    """The claim ``text`` means, written as ``NOTION:PARAMS`` where that parses, else ``None`` (``None`` too when
    ``text`` is right already).

    Reads the forms a newcomer types: other separators (``dp=1``, ``dp 1``, ``dp:1,1e-5``, ``dp:(1, 1e-5)``,
    ``dp(1)``), ε's name for ε-DP (``eps:1``, ``epsilon=1``), the label the output prints (``1-DP``,
    ``(1, 1e-05)-DP``), a bare ε (``1``, ``1,1e-5``: ε-DP), and a bare notion whose ε ``epsilon`` gives
    (``dp`` with ``--epsilon 1``).
    """
    from mechanisms.claims.parsing import parse_claim

    if not isinstance(text, str) or not text.strip():
        return None
    written = text.strip().lower()
    label = re.fullmatch(r"\(?([^()]*?)\)?\s*-\s*([a-zμ-]+)", written)  # the output's label: 1-DP, (1, 1e-05)-DP
    if label and re.match(r"[0-9.]", label.group(1)):
        written = f"{label.group(2)}:{label.group(1)}"
    parts = [part for part in re.split(r"[\s:=,;()/]+", written) if part]
    if not parts:
        return None
    if parts[0] in _EPSILON_NAMES:
        parts[0] = "dp"
    elif re.match(r"[0-9.]", parts[0]):  # a bare ε (and δ): an (ε, δ)-DP claim
        parts.insert(0, "dp")
    else:
        parts[0] = _CLAIM_NOTION_NAMES.get(parts[0], parts[0])
    if len(parts) == 1 and parts[0] in ("dp", "ldp") and epsilon is not None:
        parts.append(_number(epsilon))
    candidate = ":".join(parts)
    if candidate == text.strip():
        return None
    try:
        parse_claim(candidate)
    except InputError:
        return None
    return candidate


def claim_form_error(text: str, argument: str, epsilon=None) -> InputError | None:
    """The error for a claim written in another form than ``NOTION:PARAMS`` whose meaning
    :func:`corrected_claim` reads, naming ``argument`` (``--claim``, ``[claim] spec``), else ``None``."""
    fixed = corrected_claim(text, epsilon)
    if fixed is None:
        return None
    here = f"--claim {fixed}" if argument == "--claim" else f"{argument} = \"{fixed}\""
    return InputError(f"argument '{argument}': {text!r} is not a claim; a claim is NOTION:PARAMS, its parts joined by "
                      f"':' ({CLAIM_SYNTAX}): here {here}")


def mechanism_spec_error(spec: str, base_dir: str | None) -> InputError | None:
    """The error for ``--mechanism`` naming a file without its function (``f.py``) or a function without its file
    (``count``), with the spec to type; ``None`` for a spec with a ``:`` (the loader reads it)."""
    if not isinstance(spec, str) or ":" in spec or not spec.strip():
        return None
    folder = Path(base_dir) if base_dir else Path.cwd()
    if spec.endswith(".py"):
        path = Path(spec).expanduser()
        path = path if path.is_absolute() else folder / path
        if not path.is_file():
            return InputError(f"--mechanism {spec!r}: no such file {str(path)!r}; give the file that defines your "
                              "function, with the function's name: --mechanism FILE.py:NAME")
        names = _top_level_names(path, functions_only=True)
        if not names:
            return InputError(f"--mechanism {spec!r} names a file without the function to audit in it "
                              f"(FILE.py:NAME), and {spec} defines no function at its top level")
        others = f", or another of its functions ({', '.join(names[1:9])}{', ...' if len(names) > 9 else ''})"
        return InputError(f"--mechanism {spec!r} names a file without the function to audit in it (FILE.py:NAME): "
                          f"here --mechanism {spec}:{names[0]}" + (others if len(names) > 1 else ""))
    name = spec.strip()
    if not all(part.isidentifier() for part in name.split(".")):
        return None  # the loader says what it takes
    files = [path.name for path in sorted(folder.glob("*.py"))[:200] if name in _top_level_names(path)]
    if files:
        return InputError(f"--mechanism {spec!r} names a function without its file (FILE.py:{name}): "
                          f"here --mechanism {files[0]}:{name}")
    from mechanisms.catalog import catalog_names

    if name in catalog_names():
        return InputError(f"--mechanism {spec!r} names a catalog mechanism: give --mechanism catalog:{name}")
    return InputError(f"--mechanism {spec!r} names a function without its file (FILE.py:{name}), and no .py file in "
                      f"{str(folder)!r} defines {name}: give --mechanism FILE.py:{name} with the file that does")


def _top_level_names(path: Path, functions_only: bool = False) -> list:
    """The public names a Python file defines at its top level (functions, and unless ``functions_only`` classes
    and assignments), from its syntax tree; ``[]`` for a file that cannot be read or parsed."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
        elif functions_only:
            continue
        elif isinstance(node, ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [target.id for target in node.targets if isinstance(target, ast.Name)]
    return [name for name in names if not name.startswith("_")]


def split_claim_error(claim: str, config: str, epsilon=None) -> InputError | None:
    """The error for a claim typed as two words (``--claim dp 1``), whose second word argparse read as the
    configuration file ``config``; ``None`` when the two words make no claim."""
    fixed = corrected_claim(f"{claim} {config}", epsilon)
    if fixed is None:
        return None
    return InputError(f"argument '--claim' takes one value, NOTION:PARAMS joined by ':': '--claim {claim} {config}' "
                      f"gave it {claim!r} and read {config!r} as the CONFIG file; here --claim {fixed}")
