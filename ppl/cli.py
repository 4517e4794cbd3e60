"""The `ppl` command: check, graph (and infer). Thin: parses options, calls the API, prints.

Exit codes: 0 success, 1 a user error (printed without a traceback), 2 bad usage,
3 an internal error (a bug in ppl, reported as such), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback

from ppl.diagnostics import PplError

EXIT_OK, EXIT_USER, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def _assignment(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def parser() -> argparse.ArgumentParser:
    from ppl import __version__
    top = argparse.ArgumentParser(prog="ppl", description="Variational inference by message passing.")
    top.add_argument("--version", action="version", version=f"ppl {__version__}")
    sub = top.add_subparsers(dest="command", required=True)

    def common(p, data_required=False):
        p.add_argument("model", help="the .vim model file")
        p.add_argument("data", nargs=None if data_required else "?", help="a CSV file with the data")
        p.add_argument("--set", action="append", default=[], type=_assignment, metavar="NAME=VALUE",
                       help="override a constant declared with `const`")
        p.add_argument("--method", action="append", default=[], type=_assignment, metavar="FACTOR=RULE",
                       help="choose the update rule for a factor (vmp, ncvmp, cvi, jaakkola, ...)")

    check = sub.add_parser("check", help="parse, check shapes and print the rule chosen for every factor")
    common(check)
    check.add_argument("--format", choices=("table", "json"), default="table")
    graph = sub.add_parser("graph", help="print the factor graph as Graphviz DOT")
    common(graph)
    infer = sub.add_parser("infer", help="fit the approximate posterior and print it with the ELBO")
    common(infer, data_required=True)
    infer.add_argument("--seed", type=int, default=None, help="seed of every random choice")
    infer.add_argument("--max-iter", type=int, default=500, help="sweeps at most (default 500)")
    infer.add_argument("--tol", type=float, default=1e-6, help="relative ELBO change to stop at (default 1e-6)")
    infer.add_argument("--restarts", type=int, default=1, help="runs from different starts; keep the best ELBO")
    infer.add_argument("--time-limit", type=float, default=None, metavar="SECONDS")
    infer.add_argument("--output", metavar="FILE", help="write results to FILE.json or FILE.csv")
    infer.add_argument("--draws", type=int, default=0, metavar="N", help="draw N samples from q")
    infer.add_argument("--draws-output", metavar="FILE.csv", help="where to write the draws")
    infer.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return top


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        constants = {}
        for name, value in args.set:
            try:
                constants[name] = _number(value)
            except argparse.ArgumentTypeError as exc:
                print(f"ppl: error: --set {name}: {exc}", file=sys.stderr)
                return EXIT_USAGE
        return COMMANDS[args.command](args, constants)
    except PplError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USER
    except KeyboardInterrupt:
        print("ppl: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:  # a bug in ppl: say so, and keep the traceback for the report
        traceback.print_exc()
        print("ppl: internal error — this is a bug in ppl, please report it with the model and data.",
              file=sys.stderr)
        return EXIT_INTERNAL


def _check(args, constants) -> int:
    import ppl
    from ppl.report import check_report
    model = ppl.load(args.model, set=constants)
    report = model.check_report(args.data, dict(args.method))
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        title = f"model {args.model}" + (f", data {args.data}" if args.data else "")
        sys.stdout.write(check_report(report, title))
    return EXIT_OK


def _graph(args, constants) -> int:
    import ppl
    from ppl.graph import to_dot
    model = ppl.load(args.model, set=constants)
    dataset = model.bind(args.data) if args.data else None
    model.analyze(dataset, dict(args.method))  # an unknown rule or factor in --method is an error here too
    sys.stdout.write(to_dot(model.graph(dataset)))
    return EXIT_OK


def _infer(args, constants) -> int:
    import ppl
    from ppl.cli_checks import check_infer_options
    from ppl.interrupt import SweepInterrupt
    from ppl.report import infer_report, write_draws, write_posterior
    check_infer_options(args)
    import warnings
    from ppl.infer import DampingWarning
    warnings.simplefilter("ignore", DampingWarning)  # the report prints the same note
    model = ppl.load(args.model, set=constants)
    progress = None if args.quiet or not sys.stderr.isatty() else _Progress()
    with SweepInterrupt(progress).installed() as stop:
        posterior = model.infer(args.data, seed=args.seed, max_iter=args.max_iter, tol=args.tol,
                                restarts=args.restarts, methods=dict(args.method), time_limit=args.time_limit,
                                progress=stop)
    if progress is not None:
        progress.close()
    if args.output:
        write_posterior(posterior, args.output, _run_record(args, constants))
    if args.draws:
        write_draws(posterior, args.draws, args.seed, args.draws_output)
    if not args.quiet:
        sys.stdout.write(infer_report(posterior, f"model {args.model}, data {args.data}"))
    return EXIT_INTERRUPTED if posterior.interrupted else EXIT_OK


def _run_record(args, constants) -> dict:
    """What produced a result file: ppl's version, the seed, the options and the input paths."""
    from ppl import __version__
    options = {"set": constants, "method": dict(args.method), "max_iter": args.max_iter, "tol": args.tol,
               "restarts": args.restarts, "time_limit": args.time_limit, "draws": args.draws}
    return {"ppl": __version__, "seed": args.seed, "options": options,
            "inputs": {"model": args.model, "data": args.data}}


class _Progress:
    """A one-line status on stderr, shown only once a run has lasted about a second."""

    def __init__(self):
        import time
        self.clock = time.perf_counter
        self.start = self.clock()
        self.shown = False

    def __call__(self, iteration: int, elbo: float) -> None:
        if self.clock() - self.start > 1.0:
            sys.stderr.write(f"\r  sweep {iteration:5d}  ELBO {elbo:.6f}")
            sys.stderr.flush()
            self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


COMMANDS = {"check": _check, "graph": _graph, "infer": _infer}

if __name__ == "__main__":
    sys.exit(main())
