"""The catalogue of bad inputs in docs/reliability.md: every case run through `ppl` (in-process,
as `ppl.cli.main`), with the exit code and the first line of what it prints on stderr.

    python3 benchmarks/reliability_catalogue.py            # rewrite docs/reliability.md § Catalogue
    python3 benchmarks/reliability_catalogue.py --no-write # print only

The cases are the golden error cases of tests/errors (bad models, bad data) and those of
benchmarks/reliability_cases.py (files, command-line options, schedules, blocks, saved posteriors,
clusters, numerics and the engine), written to a temporary folder. The script exits 1 if any case
ends in an internal error (exit 3), a traceback, or another code than the one it names.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

import _report  # noqa: F401  (one BLAS thread, before numpy loads)

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "errors")]

import regenerate  # noqa: E402  (tests/errors: the golden cases)
from reliability_cases import CASES, UNREACHABLE  # noqa: E402

DOC = ROOT / "docs" / "reliability.md"
TITLE = "## Catalogue of bad inputs"
KIND_BY_CODE = {"E0": "files", "E1": "syntax", "E2": "semantics", "E3": "options", "E4": "data", "E5": "engine",
                "E6": "engine", "E7": "semantics", "E8": "data"}

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
    """(kind, what, command, exit code, message, problem) for every case; the problem is "" or
    what is wrong with the outcome (an internal error, another code than the case's)."""
    found = []
    for case in regenerate.cases():
        code, stderr = regenerate.run(case)
        what = (regenerate.HERE / case.model).read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
        kind = KIND_BY_CODE.get(case.code[:2], "other")
        found.append((kind, what, "ppl " + " ".join(case.argv()), code, first_line(stderr), problem(code, stderr)))
    for case in CASES:
        code, stderr = run_case(case)
        found.append((case.kind, case.what, "ppl " + case.command, code, first_line(stderr),
                      problem(code, stderr, case.code)))
    return found


def run_case(case) -> tuple[int, str]:
    """(exit code, stderr) of a case of reliability_cases, in a fresh folder holding its files."""
    with tempfile.TemporaryDirectory(prefix="ppl-catalogue-") as tmp:
        folder = Path(tmp)
        for name, content in case.files:
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        if case.before:
            run_cli(shlex.split(case.before), folder)
        return run_cli(shlex.split(case.command), folder)


def printed_code(stderr: str) -> str | None:
    """The error code `ppl` printed (`[E406]`), or None."""
    found = re.search(r"\[(E\d{3})\]", stderr)
    return found.group(1) if found else None


def problem(code: int, stderr: str, expected: str | None = "any") -> str:
    if code == 3 or "Traceback" in stderr:
        return "INTERNAL ERROR"
    if expected != "any" and printed_code(stderr) != expected:
        return f"expected {expected or 'no error'}"
    return ""


def report(found: list[tuple]) -> str:
    order = list(KIND_BY_CODE.values()) + ["numerics"]
    found = sorted(found, key=lambda r: order.index(r[0]) if r[0] in order else len(order))
    internal = sum(r[5] == "INTERNAL ERROR" for r in found)
    lines = [TITLE, "",
             f"Written by `python3 benchmarks/reliability_catalogue.py`: {len(found)} bad inputs, each run through "
             f"`ppl`; {internal} end in an internal error. Exit codes: 0 the run completes (an input that "
             "used to crash), 1 a located error, 2 bad usage. Golden cases from `tests/errors` run from that "
             "folder; the others (`benchmarks/reliability_cases.py`) in a fresh folder holding the files they "
             f"name. Every error code of ppl is printed by a case, but {len(UNREACHABLE)} that no command line "
             f"reaches ({', '.join(sorted(UNREACHABLE))}: the reasons are in `UNREACHABLE`; "
             "`tests/test_catalogue.py` checks both).", "",
             "| # | kind | input | command | exit | what `ppl` prints first |", "|---|---|---|---|---|---|"]
    for i, (kind, what, command, code, message, bad) in enumerate(found, 1):
        shown = message.replace("|", "\\|")
        flag = f" **{bad}**" if bad else ""
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
