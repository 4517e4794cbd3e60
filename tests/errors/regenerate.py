"""Regenerate the golden `.expected` files of the error catalogue.

    python3 tests/errors/regenerate.py            # rewrite every .expected file
    python3 tests/errors/regenerate.py 021 105    # only cases whose name contains one of these

The catalogue (in the spirit of stanc3's test/integration/bad):

- ``models/NNN_name.vim``: a bad model, checked alone (``ppl check models/NNN_name.vim``);
- ``data/NNN_name.vim`` + ``data/NNN_name.csv``: a good model with bad data
  (``ppl check data/NNN_name.vim data/NNN_name.csv``).

Every case starts with comment lines that describe it:

- ``# <what is wrong>``
- ``# args: --set K=4`` (optional): extra command-line arguments;
- ``# command: infer`` (optional, default ``check``): the command the case runs, for errors that
  only inference meets;
- ``# at: LINE:COL TOKEN`` for a model case: where the error must point, and the text found
  there (``TOKEN`` may be empty for the end of the file); ``# at: none`` for an option error,
  which has no place in the model;
- ``# at: column 'c', row r`` for a data case: the location that follows the data file's name
  (empty when the error concerns the whole file); ``# at: LINE:COL TOKEN`` when the error is
  located in the model;
- ``# code: E201``: the error code; ``?`` stands for any digit (``E2??``) where a case pins a
  bug for which ppl has no error yet;
- ``# hint: mu`` (optional): the name a ``did you mean `...`?`` hint must offer.

The CLI runs in-process, from this directory, so the file names in the messages are the short
relative ones. A case whose output disagrees with its metadata (exit code not 1, another error
code, another location, another hint: a bug in ppl) gets no `.expected` file: a stale one is
removed and the case is listed on stdout, so a bug is never frozen into a golden file.
Review the diff (`git diff tests/errors`) before committing.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@dataclass(frozen=True)
class Case:
    kind: str  # "models" or "data"
    name: str  # NNN_short_name
    model: str  # path relative to HERE
    data: str | None
    args: tuple[str, ...]
    at: str  # the `# at:` metadata
    code: str  # the `# code:` metadata
    hint: str | None = None  # the `# hint:` metadata
    command: str = "check"  # the `# command:` metadata

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def expected(self) -> Path:
        return HERE / self.kind / f"{self.name}.expected"

    def argv(self) -> list[str]:
        return [self.command, self.model] + ([self.data] if self.data else []) + list(self.args)


def _metadata(path: Path) -> dict:
    meta = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        key, sep, value = line[1:].strip().partition(":")
        if sep and key in ("args", "at", "code", "hint", "command"):
            meta[key] = value.strip()
    return meta


def cases() -> list[Case]:
    found = []
    for kind in ("models", "data"):
        for path in sorted((HERE / kind).glob("*.vim")):
            meta = _metadata(path)
            for key in ("at", "code"):
                if key not in meta:
                    raise ValueError(f"{path}: missing `# {key}:` line")
            data = f"{kind}/{path.stem}.csv" if kind == "data" else None
            if data and not (HERE / data).exists():
                raise ValueError(f"{path}: missing {data}")
            found.append(Case(kind, path.stem, f"{kind}/{path.name}", data,
                              tuple(shlex.split(meta.get("args", ""))), meta["at"], meta["code"],
                              meta.get("hint"), meta.get("command", "check")))
    return found


def model_location(case: Case) -> tuple[int, int, str] | None:
    """(line, column, token) from a model case's `# at: LINE:COL TOKEN`, or None for `none`."""
    if case.at == "none" or not re.match(r"\d+:\d+", case.at):
        return None
    where, _, token = case.at.partition(" ")
    line, column = where.split(":")
    return int(line), int(column), token


def location_prefix(case: Case) -> str:
    """What the first line of stderr must start with: the location, then the kind of error."""
    if case.kind == "data" and case.at != "none" and not re.match(r"\d+:\d+", case.at):
        return f"{case.data}{', ' + case.at if case.at else ''}: data error"
    found = model_location(case)
    if found is None:
        return "option error"
    return f"{case.model}:{found[0]}:{found[1]}: model error"


def has_code(line: str, code: str) -> bool:
    """Whether `line` carries the error code `code` (``?`` matches any digit)."""
    return re.search(r"\[" + re.escape(code).replace(r"\?", r"\d") + r"\]", line) is not None


def problems(case: Case, code: int, stderr: str) -> list[str]:
    """How the output of a case disagrees with its metadata (empty when it agrees)."""
    first = stderr.splitlines()[0] if stderr else ""
    found = []
    if code != 1:
        found.append(f"exit {code}")
    if "Traceback" in stderr:
        found.append("traceback")
    if not first.startswith(location_prefix(case)):
        found.append(f"location: {first!r} does not start with {location_prefix(case)!r}")
    if not has_code(first, case.code):
        found.append(f"code: {case.code} not in {first!r}")
    if case.hint is not None and f"did you mean `{case.hint}`?" not in stderr:
        found.append(f"hint: no `did you mean `{case.hint}`?`")
    return found


def run(case: Case) -> tuple[int, str]:
    """(exit code, stderr) of ``ppl`` on a case, run in-process from this directory."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from ppl import cli

    err, out = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(HERE)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = cli.main(case.argv())
            except SystemExit as exc:  # argparse usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(cwd)
    return code, err.getvalue()


def main(argv: list[str]) -> int:
    selected = [c for c in cases() if not argv or any(a in c.name for a in argv)]
    written, refused = 0, []
    for case in selected:
        code, stderr = run(case)
        wrong = problems(case, code, stderr)
        if wrong:
            refused.append((case, wrong))
            case.expected.unlink(missing_ok=True)
            continue
        case.expected.write_text(stderr, encoding="utf-8")
        written += 1
    print(f"wrote {written} .expected file(s)")
    for case, wrong in refused:
        print(f"NOT WRITTEN {case.id}: " + "; ".join(wrong))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
