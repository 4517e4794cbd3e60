"""The `ppl` command: check, graph (and infer). Thin: parses options, calls the API, prints.

Exit codes: 0 success, 1 a user error (printed without a traceback), 2 bad usage,
3 an internal error (a bug in ppl, reported as such).
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback

from ppl.diagnostics import PplError

EXIT_OK, EXIT_USER, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


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
    top = argparse.ArgumentParser(prog="ppl", description="Variational inference by message passing.")
    sub = top.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("model", help="the .vim model file")
        p.add_argument("data", nargs="?", help="a CSV file with the data")
        p.add_argument("--set", action="append", default=[], type=_assignment, metavar="NAME=VALUE",
                       help="override a constant declared with `const`")
        p.add_argument("--method", action="append", default=[], type=_assignment, metavar="FACTOR=RULE",
                       help="choose the update rule for a factor (vmp, ncvmp, cvi, jaakkola, ...)")

    check = sub.add_parser("check", help="parse, check shapes and print the rule chosen for every factor")
    common(check)
    check.add_argument("--format", choices=("table", "json"), default="table")
    graph = sub.add_parser("graph", help="print the factor graph as Graphviz DOT")
    common(graph)
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
        return EXIT_USER
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
    sys.stdout.write(to_dot(model.graph(dataset)))
    return EXIT_OK


COMMANDS = {"check": _check, "graph": _graph}

if __name__ == "__main__":
    sys.exit(main())
