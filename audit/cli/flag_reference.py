"""The command-line reference's flag tables, generated from the argparse parsers of ``miaudit``.

``python -m audit.cli.flag_reference docs/reference/cli.md`` rewrites the tables between the
page's ``<!-- flags:start -->`` and ``<!-- flags:end -->`` markers (one table per command, and one
row per sub-command of a command that has them, such as ``bounds``); a test checks that the page
holds the current tables, so a new flag cannot be left undocumented.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from audit.config.reference import with_table

START, END = "<!-- flags:start -->", "<!-- flags:end -->"


#: Every command's own flags (stated once, under "Conventions of every command").
COMMON = {"json", "seed", "quiet"}


def _cell(text: str) -> str:
    """``text`` for a Markdown table cell: one line, pipes escaped (GitHub's rule, inside code too)."""
    return " ".join(text.split()).replace("|", "\\|")


def _prose(text: str) -> str:
    """``text`` for a table cell outside code: what Markdown would read as HTML or emphasis escaped."""
    return _cell(text).replace("&", "&amp;").replace("<", "&lt;").replace("*", "\\*")


def _value(action: argparse.Action) -> str:
    """What the flag takes: its metavar, its choices, or nothing for a switch."""
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(str(choice) for choice in action.choices) + "}"
    return action.dest.upper()


def _usage(action: argparse.Action) -> str:
    value = _value(action)
    if not action.option_strings:
        return value
    names = ", ".join(action.option_strings)
    return f"{names} {value}" if value else names


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help:
        return ""
    return parser._get_formatter()._expand_help(action)  # noqa: SLF001 - argparse's own %(default)s expansion


def _documented(parser: argparse.ArgumentParser) -> list:
    """The parser's own arguments, in order: not --help, the common flags or a sub-command group."""
    return [action for action in parser._actions  # noqa: SLF001 - argparse keeps them there
            if action.help != argparse.SUPPRESS and action.dest not in COMMON
            and not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))]  # noqa: SLF001


def _sub_commands(parser: argparse.ArgumentParser) -> dict:
    """``{name: parser}`` of a parser's sub-commands (empty for a command without)."""
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return dict(action.choices)
    return {}


def command_table(name: str, parser: argparse.ArgumentParser) -> str:
    """The Markdown section of one command: its description, a flag table, its sub-commands."""
    lines = [f"### `miaudit {name}`", "", _prose(parser.description or ""), ""]
    own = _documented(parser)
    if own:
        lines += ["| flag | meaning |", "| --- | --- |"]
        lines += [f"| `{_cell(_usage(action))}` | {_prose(_help(parser, action))} |" for action in own]
    else:
        lines.append("No flags besides the common ones.")
    subs = _sub_commands(parser)
    if subs:
        lines += ["", f"`miaudit {name} NAME` takes one of these, each with its own flags:", "",
                  f"| {name} NAME | computes | flags |", "| --- | --- | --- |"]
        for sub_name, sub in subs.items():
            flags = ", ".join(f"`{_cell(_usage(action))}`" for action in _documented(sub))
            lines.append(f"| `{sub_name}` | {_prose(sub.description or '')} | {flags} |")
    return "\n".join(lines) + "\n"


def flags_tables(parser: argparse.ArgumentParser | None = None) -> str:
    """Every command's section (:func:`command_table`), in the order ``miaudit --help`` lists them."""
    if parser is None:
        from audit.cli.main import build_parser

        parser, _ = build_parser()
    return "\n".join(command_table(name, sub) for name, sub in _sub_commands(parser).items())


if __name__ == "__main__":
    page = Path(sys.argv[1])
    page.write_text(with_table(page.read_text(), flags_tables(), START, END))
