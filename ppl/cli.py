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
DRAWS = 1000  # draws of --draws-output and FILE.nc when --draws is not given


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

    def grid_option(p):
        p.add_argument("--grid", metavar="NAME[(nodes=21, sds=4)]",
                       help="q a mixture over a grid of the scalar hyperparameter NAME, one fit of the rest per "
                            "node (docs/rules/grid.md); overrides the model's @grid, `none` turns it off")

    def common(p, data_required=False):
        p.add_argument("model", help="the .vim model file")
        p.add_argument("data", nargs=None if data_required else "?", help="the data: a CSV or Parquet file (on a cluster, a glob of them or a folder of Parquet files)")
        p.add_argument("--set", action="append", default=[], type=_assignment, metavar="NAME=VALUE",
                       help="override a constant declared with `const`")
        p.add_argument("--method", action="append", default=[], type=_assignment, metavar="FACTOR=RULE",
                       help="choose the update rule for a factor (vmp, ncvmp, cvi, jaakkola, ...)")
        p.add_argument("--gaussian-block", metavar="all|none|NAMES", default=None,
                       help="one joint Gaussian q over every Normal and MvNormal latent (all, when its size allows), none "
                            "(mean field), or the listed ones (mu,a,b); overrides the model's `block` statements")
        p.add_argument("--na", action="append", default=None, metavar="TOKEN",
                       help="a cell text that means missing, besides empty, NA, NaN, nan, N/A, NULL, null, ...")

    check = sub.add_parser("check", help="parse, check shapes and print the rule chosen for every factor")
    common(check)
    grid_option(check)
    check.add_argument("--format", choices=("table", "json"), default="table")
    check.add_argument("--schedule", metavar="SCHEDULE", help="show the plan of this schedule, e.g. 'svi(batch=64)'")
    graph = sub.add_parser("graph", help="print the factor graph as Graphviz DOT")
    common(graph)
    infer = sub.add_parser("infer", help="fit the approximate posterior and print it with the ELBO")
    common(infer, data_required=True)
    grid_option(infer)
    infer.add_argument("--seed", type=int, default=None, help="seed of every random choice")
    infer.add_argument("--max-iter", type=int, default=500, help="sweeps at most (default 500)")
    infer.add_argument("--tol", type=float, default=1e-6,
                       help="stop within TOL nats of the fixed point: the last ELBO increase over one minus its "
                            "rate of decrease, absolute, not relative to |ELBO| (stochastic rules: change of "
                            "the 10-sweep mean ELBO below TOL times |ELBO|) (default 1e-6)")
    infer.add_argument("--mean-tol", type=float, default=1e-5,
                       help="and every posterior mean moved less than this many posterior sds in the last "
                            "sweep (default 1e-5)")
    infer.add_argument("--accelerate", action=argparse.BooleanOptionalAction, default=None,
                       help="SQUAREM steps on the natural parameters, kept only if the ELBO does not fall "
                            "(laplace, delta: if the fixed-point residual does not grow); default: on for "
                            "deterministic rules, off while a Gaussian is solved by Woodbury")
    infer.add_argument("--accelerator", choices=["squarem", "anderson"],
                       help="which extrapolation --accelerate takes (default squarem; anderson: type II, "
                            "memory 3, the same safeguard)")
    infer.add_argument("--schedule", metavar="SCHEDULE", help="how steps visit the groups of the data, e.g. "
                       "'svi(batch=64)' (overrides the model's `schedule` statement; default batch)")
    infer.add_argument("--stream", action="store_true", help="with a stochastic --schedule: read each step's "
                       "groups from the file, not the whole file (the posterior keeps the globals only)")
    infer.add_argument("--dask", metavar="ADDRESS", help="run on the Dask cluster whose scheduler is at ADDRESS "
                       "(DATA: a glob of CSV or Parquet files, or a folder of Parquet files; needs ppl[dask])")
    infer.add_argument("--workers", type=int, metavar="N", help="run on a Dask cluster of N processes on this machine")
    infer.add_argument("--restarts", type=int, default=1, help="runs from different starts; keep the best ELBO")
    infer.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                       help="stop after SECONDS of inference, not converged")
    infer.add_argument("--output", metavar="FILE",
                       help="write results to FILE.json (loadable), FILE.csv (stansummary layout) or FILE.nc "
                            "(ArviZ netCDF, needs ppl[arviz])")
    infer.add_argument("--draws", type=int, default=None, metavar="N",
                       help="draw N samples from q (for --draws-output, or into FILE.nc: default 1000)")
    infer.add_argument("--draws-output", metavar="FILE.csv", help="where to write the draws")
    infer.add_argument("--vars", metavar="PATTERNS",
                       help="variables to list, comma-separated glob patterns (default: all but long local ones); "
                            "in --output: the rows of FILE.csv, the draws of FILE.nc; FILE.json keeps every "
                            "variable (a loadable posterior) and records the patterns")
    infer.add_argument("--trace-terms", action="store_true",
                       help="record every factor's ELBO term after each sweep (for `ppl plot`)")
    infer.add_argument("--quiet", action="store_true", help="print nothing but errors and no progress bar")
    plot = sub.add_parser("plot", help="plot a posterior saved with --output FILE.json (needs ppl[plot])")
    plot.add_argument("posterior", help="a posterior written by `ppl infer ... --output post.json`")
    plot.add_argument("--vars", metavar="PATTERNS", help="variables to show, comma-separated glob patterns")
    plot.add_argument("--kind", choices=("all", "elbo", "marginals", "components"), default="all",
                      help="which plot (default: all that apply)")
    plot.add_argument("-o", "--output", required=True, metavar="FIG.png", help="image file (.png, .svg, .pdf)")
    for name, what, output in (("predict", "predict for new data with a saved posterior: fit the new rows' local "
                                "variables, give every empty response cell its predictive", "pred.csv"),
                               ("score", "log predictive density of new data under a saved posterior, per row and "
                                "in total (every response cell held out)", "scores.csv")):
        p = sub.add_parser(name, help=what)
        p.add_argument("model", help="the .vim model the posterior was fitted to")
        p.add_argument("posterior", help="a posterior written by `ppl infer ... --output post.json`")
        p.add_argument("data", help="the new data (CSV or Parquet); empty or absent response cells are predicted")
        p.add_argument("--set", action="append", default=[], type=_assignment, metavar="NAME=VALUE",
                       help="the constants the posterior was fitted with")
        p.add_argument("--na", action="append", default=None, metavar="TOKEN", help="a cell text that means missing")
        p.add_argument("--seed", type=int, default=0, help="seed of the fold-in's starting point (default 0)")
        p.add_argument("-o", "--output", metavar=output.upper(), help=f"write the full table to {output}")
    return top


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        constants = {}
        for name, value in getattr(args, "set", ()):
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
    except MemoryError as exc:  # the sizes asked for, not a bug: say what ran out
        print(f"ppl: out of memory: {exc}\n  hint: a size of the model or the data (a constant such as K, --set, a "
              "number of levels) may be larger than meant; else run on a machine with more memory, or stream the "
              "data (--stream, docs/scale.md)", file=sys.stderr)
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
    report = model.check_report(args.data, dict(args.method), args.schedule, na=args.na,
                                gaussian_block=args.gaussian_block, grid=args.grid)
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
    dataset = model.bind(args.data, na=args.na) if args.data else None
    model.analyze(dataset, dict(args.method), args.gaussian_block)  # an unknown rule or name is an error here too
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
    if args.vars is not None:
        from ppl.infer.selection import matched
        matched(args.vars, [n for n, v in model.checked.variables.items() if v.kind != "const"])
    progress = None
    if not args.quiet and sys.stderr.isatty():
        from ppl.report.progress import Progress
        progress = Progress(args.max_iter)
    try:
        with _client(args) as client, SweepInterrupt(progress).installed() as stop:
            posterior = model.infer(args.data, seed=args.seed, max_iter=args.max_iter, tol=args.tol,
                                    restarts=args.restarts, methods=dict(args.method), time_limit=args.time_limit,
                                    progress=stop, record_terms=args.trace_terms, schedule=args.schedule, na=args.na,
                                    stream=args.stream, mean_tol=args.mean_tol, accelerate=_accelerate(args),
                                    gaussian_block=args.gaussian_block, client=client, grid=args.grid)
    finally:
        if progress is not None:
            progress.close()
    shown = args.vars
    if args.vars is not None:  # a variable of the model this posterior does not hold: a note, not a lost run
        from ppl.infer.selection import held
        shown, notes = held(posterior, args.vars)
        posterior.notes = list(posterior.notes) + notes
    if args.output:
        write_posterior(posterior, args.output, shown, _draws(args), args.seed, _run_record(args, constants))
    if args.draws_output:
        write_draws(posterior, _draws(args), args.seed, args.draws_output)
    if not args.quiet:
        sys.stdout.write(infer_report(posterior, f"model {args.model}, data {args.data}", shown))
    return EXIT_INTERRUPTED if posterior.interrupted else EXIT_OK


def _draws(args) -> int:
    """The draws --draws-output and FILE.nc take: --draws N, by default 1000."""
    return DRAWS if args.draws is None else args.draws


def _client(args):
    """The Dask client of --dask or --workers (Dask imported only then), else nothing."""
    import contextlib
    if args.dask is None and args.workers is None:
        return contextlib.nullcontext()
    try:
        import distributed  # noqa: F401
    except ImportError:
        from ppl.diagnostics import OptionError
        raise OptionError("E368", "--dask and --workers run on Dask, which is not installed",
                          hint='pip install "ppl[dask]"') from None
    from ppl.cluster.connect import connect
    return connect(args.dask, args.workers)


def _run_record(args, constants) -> dict:
    """What produced a result file: ppl's version, the seed, the options and the input paths."""
    from ppl import __version__
    options = {"set": constants, "method": dict(args.method), "max_iter": args.max_iter, "tol": args.tol,
               "mean_tol": args.mean_tol, "restarts": args.restarts, "time_limit": args.time_limit,
               "draws": args.draws or 0}
    given = {"accelerate": _accelerate(args), "schedule": args.schedule, "stream": args.stream or None,
             "na": args.na, "gaussian_block": args.gaussian_block, "grid": args.grid, "workers": args.workers,
             "dask": args.dask, "vars": args.vars}  # vars: what was listed; the document keeps every variable
    options.update({k: v for k, v in given.items() if v is not None})
    return {"ppl": __version__, "seed": args.seed, "options": options,
            "inputs": {"model": args.model, "data": args.data}}


def _plot(args, constants) -> int:
    from pathlib import Path
    import ppl
    from ppl.cli_checks import IMAGE_SUFFIXES, check_output
    check_output("-o", Path(args.output), [Path(args.posterior)], IMAGE_SUFFIXES)
    posterior = ppl.Posterior.load(args.posterior)
    posterior.plot(args.kind, args.vars, args.output)
    return EXIT_OK


def _held_out(args, constants) -> int:
    """`ppl predict` and `ppl score`: the posterior checked against the model, then the new data."""
    from pathlib import Path
    import ppl
    from ppl.cli_checks import check_output
    from ppl.diagnostics import OptionError
    from ppl.report.prediction import prediction_report, score_report
    if args.seed < 0:
        raise OptionError("E325", f"--seed {args.seed}: a seed is a non-negative integer")
    if args.output:
        check_output("-o", Path(args.output), [Path(args.model), Path(args.posterior), Path(args.data)])
    model = ppl.load(args.model, set=constants)
    posterior = ppl.Posterior.load(args.posterior, model)
    title = f"model {args.model}, posterior {args.posterior}, data {args.data}"
    if args.command == "predict":
        result = posterior.predict(args.data, model, args.na, args.seed)
        if args.output:
            result.to_csv(args.output)
        sys.stdout.write(prediction_report(result, title))
    else:
        result = posterior.score(args.data, model, args.na, args.seed)
        if args.output:
            from ppl.report import write_atomic
            write_atomic(args.output, result.frame().to_csv(index=False, float_format="%.10g"))
        sys.stdout.write(score_report(result, title))
    return EXIT_OK


def _accelerate(args):
    """`accelerate=` of the Python API from --accelerate/--no-accelerate and --accelerator."""
    if args.accelerate is False or args.accelerator is None:
        return args.accelerate
    return args.accelerator


COMMANDS = {"check": _check, "graph": _graph, "infer": _infer, "plot": _plot, "predict": _held_out,
            "score": _held_out}

if __name__ == "__main__":
    sys.exit(main())

