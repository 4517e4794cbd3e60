"""The catalogue of bad inputs in docs/reliability.md: every case run through `ppl` (in-process,
as `ppl.cli.main`), with the exit code and the first line of what it prints on stderr.

    python3 benchmarks/reliability_catalogue.py            # rewrite docs/reliability.md § Catalogue
    python3 benchmarks/reliability_catalogue.py --no-write # print only

The cases are the golden error cases of tests/errors (bad models, bad data) and the cases below
(files, command-line options, numerics and the engine), written to a temporary folder. The script
exits 1 if any case ends in an internal error (exit 3) or a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import _report  # noqa: F401  (one BLAS thread, before numpy loads)

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "errors")]

import regenerate  # noqa: E402  (tests/errors: the golden cases)

DOC = ROOT / "docs" / "reliability.md"
TITLE = "## Catalogue of bad inputs"
KIND_BY_CODE = {"E0": "files", "E1": "syntax", "E2": "semantics", "E3": "options", "E4": "data", "E5": "engine"}

REGRESSION = "data x: real[N]\ndata y: real[N]\nw ~ Normal(0, 1)\ny ~ Normal(w * x, 1)\n"
REGRESSION_CSV = "x,y\n1,2\n2,3\n3,5\n"
POISSON_WIDE = ("const D = 2\ndata x: real[N, D] from x1..x2\ndata y: int[N]\nw ~ MvNormal(zeros(D), eye(D))\n"
                "for n in 1..N { y[n] ~ Poisson(exp(dot(w, x[n]))) }\n")
POISSON_WIDE_CSV = "x1,x2,y\n" + "".join(f"{8 * (-1) ** i},{8.1 * (-1) ** (i // 2)},{i % 4}\n" for i in range(12))
GP = ("const ell = 1.5\ndata x: real[N]\ndata y: bool[N]\n"
      "f ~ MvNormal(zeros(N), cov=rbf(x, ell, 1.0) + 0.0001 * eye(N))\ny ~ Bernoulli(logistic(f)) @cvi(form=site)\n")
GP_CSV = "x,y\n0,1\n1,1\n2,0\n3,0\n"
MIXTURE = ("const K = 2\ndata y: real[N]\npi ~ Dirichlet(ones(K))\nfor k in 1..K { mu[k] ~ Normal(0, 0.01) }\n"
           "for n in 1..N {\n  z[n] ~ Categorical(pi)\n  y[n] ~ Normal(mu[z[n]], 1.0)\n}\n")


@dataclass(frozen=True)
class Extra:
    """A case beyond tests/errors: files to write (name -> text or bytes) and the command line."""

    kind: str
    what: str
    command: str  # `ppl` arguments, shell-quoted, relative to the case's folder
    files: tuple = ()


EXTRAS = [
    Extra("files", "model file is not UTF-8 (Latin-1 `é`)", "check latin1.vim",
          (("latin1.vim", "# café\nmu ~ Normal(0, 1)\n".encode("latin-1")),)),
    Extra("files", "model file does not exist", "check missing.vim"),
    Extra("files", "model path is a folder", "check folder", (("folder/keep", ""),)),
    Extra("files", "data file does not exist", "infer m.vim missing.csv", (("m.vim", REGRESSION),)),
    Extra("files", "data file is empty", "infer m.vim empty.csv", (("m.vim", REGRESSION), ("empty.csv", ""))),
    Extra("files", "data file is not UTF-8", "infer m.vim latin1.csv",
          (("m.vim", REGRESSION), ("latin1.csv", "x,y\n1,2\n2,é\n".encode("latin-1")))),
    Extra("files", "data path is a folder", "infer m.vim folder", (("m.vim", REGRESSION), ("folder/keep", ""))),
    Extra("options", "`--seed -1`", "infer m.vim d.csv --seed -1", (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--draws -3`", "infer m.vim d.csv --draws -3 --draws-output draws.csv",
          (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--draws` without `--draws-output`", "infer m.vim d.csv --draws 5",
          (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--output` names a folder", "infer m.vim d.csv --output .",
          (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--output` in a folder that does not exist", "infer m.vim d.csv --output no/post.json",
          (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--output` with an unknown suffix", "infer m.vim d.csv --output post.txt",
          (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--output` is the data file", "infer m.vim d.csv --output d.csv",
          (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--draws-output` is the data file", "infer m.vim d.csv --draws 2 --draws-output d.csv",
          (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--time-limit 0`", "infer m.vim d.csv --time-limit 0",
          (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--max-iter 0`", "infer m.vim d.csv --max-iter 0", (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--tol 0`", "infer m.vim d.csv --tol 0", (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--restarts 0`", "infer m.vim d.csv --restarts 0", (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--seed` not an integer", "infer m.vim d.csv --seed x", (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "`--set w=abc`", "check m.vim --set w=abc", (("m.vim", REGRESSION),)),
    Extra("options", "`ppl graph --method y=magic`", "graph m.vim --method y=magic", (("m.vim", REGRESSION),)),
    Extra("options", "`--method` names no factor", "check m.vim --method q=vmp", (("m.vim", REGRESSION),)),
    Extra("options", "`ppl infer` without data", "infer m.vim", (("m.vim", REGRESSION),)),
    Extra("options", "an unknown flag", "infer m.vim d.csv --fast", (("m.vim", REGRESSION), ("d.csv", REGRESSION_CSV))),
    Extra("options", "an unknown command", "fit m.vim", (("m.vim", REGRESSION),)),
    Extra("numerics", "Poisson regression from a wide prior (E[rate] ~ 1e28 at the start): runs",
          "infer m.vim d.csv --quiet", (("m.vim", POISSON_WIDE), ("d.csv", POISSON_WIDE_CSV))),
    Extra("numerics", "`-1e300` in the data of a mixture", "infer m.vim d.csv",
          (("m.vim", MIXTURE), ("d.csv", "y\n0.5\n-1e300\n0.2\n1.5\n"))),
    Extra("engine", "GP classification under `@cvi(form=site)`: runs", "infer m.vim d.csv --quiet",
          (("m.vim", GP), ("d.csv", GP_CSV))),
    Extra("engine", "GP classification under `@cvi(minibatch=2)`: runs", "infer m.vim d.csv --quiet",
          (("m.vim", GP.replace("form=site", "minibatch=2")), ("d.csv", GP_CSV))),
]


def run_cli(argv: list[str], folder: Path) -> tuple[int, str]:
    """(exit code, stderr) of `ppl argv` run in-process from `folder`."""
    from ppl import cli
    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = cli.main(argv)
            except SystemExit as exc:  # argparse: usage errors, --version
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(cwd)
    return code, err.getvalue()


def first_line(stderr: str) -> str:
    """The line that says what went wrong: the error itself, or argparse's last line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[-1] if lines[0].startswith("usage:") else lines[0]


def rows() -> list[tuple]:
    """(kind, what, command, exit code, message, internal?) for every case."""
    found = []
    for case in regenerate.cases():
        code, stderr = regenerate.run(case)
        what = (regenerate.HERE / case.model).read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
        kind = KIND_BY_CODE.get(case.code[:2], "other")
        found.append((kind, what, "ppl " + " ".join(case.argv()), code, first_line(stderr),
                      code == 3 or "Traceback" in stderr))
    for extra in EXTRAS:
        with tempfile.TemporaryDirectory(prefix="ppl-catalogue-") as tmp:
            folder = Path(tmp)
            for name, content in extra.files:
                path = folder / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
            code, stderr = run_cli(shlex.split(extra.command), folder)
        found.append((extra.kind, extra.what, "ppl " + extra.command, code, first_line(stderr),
                      code == 3 or "Traceback" in stderr))
    return found


def report(found: list[tuple]) -> str:
    order = list(KIND_BY_CODE.values()) + ["numerics"]
    found = sorted(found, key=lambda r: order.index(r[0]) if r[0] in order else len(order))
    internal = sum(r[5] for r in found)
    lines = [TITLE, "",
             f"Written by `python3 benchmarks/reliability_catalogue.py`: {len(found)} bad inputs, each run through "
             f"`ppl`; {internal} end in an internal error. Exit codes: 0 the run completes (an input that "
             "used to crash), 1 a located error, 2 bad usage. Golden cases from `tests/errors` run from that "
             "folder; the others in a fresh folder holding the files they name.", "",
             "| # | kind | input | command | exit | what `ppl` prints first |", "|---|---|---|---|---|---|"]
    for i, (kind, what, command, code, message, bad) in enumerate(found, 1):
        shown = message.replace("|", "\\|")
        flag = " **INTERNAL ERROR**" if bad else ""
        lines.append(f"| {i} | {kind} | {what.replace('|', '/')} | `{command}` | {code}{flag} | {shown} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    found = rows()
    text = report(found)
    print(text)
    if not args.no_write:
        _report.write_section(text, TITLE, DOC)
    return 1 if any(r[5] for r in found) else 0


if __name__ == "__main__":
    sys.exit(main())
