"""``miaudit experiment``: list the registered experiments or run one (CSV + PNG + summary).

The registry lives in the ``experiments`` package, which library code must not import
(DESIGN.md); it is therefore looked up at run time inside :func:`run`.
"""

from __future__ import annotations

import importlib

from audit.cli.main import add_device_option, check_seed



def configure(parser) -> None:
    parser.add_argument("name", nargs="?", default=None, help="the experiment to run (see --list)")
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    parser.add_argument("--out", default=None, metavar="DIR", help="output folder (default: experiments-out/NAME)")
    parser.add_argument("--quick", action="store_true",
                        help="reduced setting: under 30 s on a 2-core CPU (what the tests run)")
    parser.add_argument("--page", default=None, metavar="FILE.md",
                        help="also write a documentation page (summary and tables; real-bugs and scans write their own "
                             "page there), e.g. docs/benchmarks/NAME.md")
    parser.add_argument("--grid", default=None, metavar="NAME",
                        help="a named size of an experiment that has several (dpsgd-audit: cpu, gpu, gpu-full; "
                             "default: the device's; device-choice: best-of-1, the default, or best-of-2)")
    parser.add_argument("--workers", type=int, default=1, metavar="K",
                        help="processes that run an experiment's independent audits side by side, the tables the "
                             "same for any K (dpsgd-audit; scans: each library's scan audits its cases in K "
                             "processes; on a GPU they share the card; default 1)")
    add_device_option(parser)


def _registry():
    from estimators.package_names import check_package_names
    from estimators.validation import InputError

    check_package_names(("experiments",), error=InputError)  # a user's experiments/ folder in the way
    return importlib.import_module("experiments.registry")


def _list():
    from audit.cli.listings import live_listing, stored_listing

    # Stored: listing live imports every experiment module (torch among them); a test keeps the two equal.
    rows = stored_listing("experiments") or live_listing("experiments")
    width = max(len(e["name"]) for e in rows)
    text = "\n".join(f"{e['name'].ljust(width)}  {e['description']}  [{e['source']}]" for e in rows)
    return {"experiments": rows}, text


def run(args):
    if (args.list and args.name is None and args.out is None and not args.quick and args.page is None
            and args.grid is None and args.workers == 1):
        return _list()  # before NumPy and the registry: a light command
    from estimators.validation import InputError

    registry = _registry()
    if args.list:
        if args.name is not None:
            raise InputError("give either --list or an experiment NAME, not both")
        ignored = [flag for flag, given in (("--out", args.out is not None), ("--quick", args.quick),
                                            ("--page", args.page is not None), ("--grid", args.grid is not None),
                                            ("--workers", args.workers != 1))
                   if given]
        if ignored:
            raise InputError(f"argument '{ignored[0]}' applies to running an experiment, not to --list")
        return _list()
    if args.name is None:
        raise InputError("argument 'name': give an experiment NAME or --list")
    from audit.report.writing import check_output_location
    from experiments.framework import DEFAULT_OUT_ROOT

    experiment = registry.get_experiment(args.name)
    check_seed(args.seed)
    # Checked before the run: a bad folder must not cost the experiment's minutes.
    out = check_output_location(args.out if args.out is not None else f"{DEFAULT_OUT_ROOT}/{experiment.name}",
                                "--out", folder=True)
    page = None
    if args.page is not None:
        if not args.page.endswith(".md"):
            raise InputError(f"argument '--page' must name a Markdown file (FILE.md), got {args.page!r}")
        page = check_output_location(args.page, "--page")
    result = registry.run(args.name, out_dir=out, quick=args.quick, seed=args.seed, device=args.device, page=page,
                          grid=args.grid, workers=args.workers)
    lines = [f"{result.name} ({result.source}): {result.seconds:.2f} s on {result.device}",
             *[f"  {finding}" for finding in result.findings],
             "files:", *[f"  {path}" for path in (*result.csv_files, result.png_file, result.summary_file,
                                                  *([result.page_file] if result.page_file else []))]]
    return result.to_dict(), "\n".join(lines)
