"""The error catalogue (tests/errors): every bad model and every bad data file is a user error.

For every case: exit code 1, no traceback, the first line of stderr starts with the location
the case declares (``FILE:LINE:COL`` for a model, ``DATA, column 'c', row r`` for data), the
error code is the declared one, a declared did-you-mean hint is offered, and stderr equals the
golden `.expected` file written by ``tests/errors/regenerate.py``.

Cases that reveal a bug in ppl are listed in `KNOWN_BUGS` with the checks they fail; those
checks are strict xfails, so they start failing loudly the day the bug is fixed (then delete
the entry and run the regenerate script).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("errors_regenerate", HERE / "errors" / "regenerate.py")
regenerate = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = regenerate  # dataclasses look their module up while the class is made
_spec.loader.exec_module(regenerate)

CASES = regenerate.cases()
CHECKS = ("exit", "traceback", "location", "code", "hint", "expected")

_LOCATION_EOF = ("at the end of the file the caret lands on the last token instead of just after it: "
                 "Lark reports `$END` as an UnexpectedToken carrying the last token's line/column, so "
                 "the end-of-file branch of parser._syntax_error is never taken")
_KWARG_SPAN = ("keyword arguments are stored as (name, expr) pairs without the name's span, so the "
               "error points at the value instead of the unknown keyword")

_ACCEPTED = {"exit", "location", "code", "expected"}  # a bad model that ppl accepts (exit 0)

# case id -> (what is wrong in ppl, the checks it fails)
KNOWN_BUGS: dict[str, tuple[str, set[str]]] = {
    "models/001_missing_brace": (_LOCATION_EOF, {"location", "expected"}),
    "models/005_missing_distribution": (_LOCATION_EOF, {"location", "expected"}),
    "models/006_missing_distribution_before_loop": (
        "keywords are not reserved: after `~` the lexer takes `for` as a distribution NAME "
        "(`x ~ for(0, 1)`, `in ~ Normal(0, 1)`, `real ~ ...` all parse), so the error lands on the loop "
        "variable `n` instead of on `for`", {"location", "expected"}),
    "models/025_unknown_keyword_parameter": (_KWARG_SPAN, {"location", "expected"}),
    "models/071_unknown_rule_option": (_KWARG_SPAN, {"location", "expected"}),
    "data/101_missing_column": (
        "diagnostics.nearest (difflib) scores `weight` and `heigth` equally for `height` and breaks the tie "
        "alphabetically, so the hint offers `weight` rather than the transposition `heigth`",
        {"hint", "expected"}),
}

_RESULTS: dict[str, tuple[int, str]] = {}


def result(case) -> tuple[int, str]:
    if case.id not in _RESULTS:
        _RESULTS[case.id] = regenerate.run(case)
    return _RESULTS[case.id]


def _params(check: str):
    for case in CASES:
        marks = []
        if case.id in KNOWN_BUGS and check in KNOWN_BUGS[case.id][1]:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[case.id][0]))
        if check == "hint" and case.hint is None:
            continue
        yield pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", _params("exit"))
def test_exit_code_is_user_error(case):
    code, stderr = result(case)
    assert code == 1, stderr


@pytest.mark.parametrize("case", _params("traceback"))
def test_no_traceback(case):
    _, stderr = result(case)
    assert "Traceback" not in stderr
    assert "internal error" not in stderr


@pytest.mark.parametrize("case", _params("location"))
def test_first_line_is_the_location(case):
    _, stderr = result(case)
    first = stderr.splitlines()[0] if stderr else ""
    assert first.startswith(regenerate.location_prefix(case)), first


@pytest.mark.parametrize("case", _params("code"))
def test_error_code(case):
    _, stderr = result(case)
    first = stderr.splitlines()[0] if stderr else ""
    assert re.search(r"\[E\d{3}\]", first), first
    assert regenerate.has_code(first, case.code), first


@pytest.mark.parametrize("case", _params("hint"))
def test_did_you_mean(case):
    _, stderr = result(case)
    assert f"did you mean `{case.hint}`?" in stderr, stderr


@pytest.mark.parametrize("case", _params("expected"))
def test_stderr_matches_expected(case):
    _, stderr = result(case)
    assert case.expected.exists(), f"no {case.expected.name}: run tests/errors/regenerate.py"
    assert stderr == case.expected.read_text(encoding="utf-8")


# ---- the catalogue itself ---------------------------------------------------------------

def test_catalogue_is_large_enough():
    models = [c for c in CASES if c.kind == "models"]
    data = [c for c in CASES if c.kind == "data"]
    assert len(CASES) >= 30 and len(models) >= 20 and len(data) >= 12
    assert len({c.name[:3] for c in CASES}) == len(CASES), "case numbers must be unique"
    assert len({c.code for c in CASES}) >= 30, "cases should cover many distinct errors"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if c.kind == "models"])
def test_declared_location_names_a_token(case):
    """The `# at: LINE:COL TOKEN` metadata is consistent with the model text."""
    found = regenerate.model_location(case)
    if found is None:
        assert case.args, "a case without a location must be about a command-line option"
        return
    line, column, token = found
    lines = (HERE / "errors" / case.model).read_text(encoding="utf-8").splitlines()
    text = lines[line - 1]
    assert 1 <= column <= len(text) + 1
    assert text[column - 1:].startswith(token), (text, column, token)
    if not token:
        assert column == len(text) + 1, "an empty token means the end of the line"


def test_every_expected_file_has_a_case():
    names = {c.expected for c in CASES}
    for path in (HERE / "errors").glob("*/*.expected"):
        assert path in names, f"orphan {path}"


def test_known_bugs_name_real_cases():
    ids = {c.id for c in CASES}
    for case_id, (_, checks) in KNOWN_BUGS.items():
        assert case_id in ids
        assert checks <= set(CHECKS)


def test_expected_files_exist_exactly_for_cases_without_known_golden_bugs():
    for case in CASES:
        frozen_bug = case.id in KNOWN_BUGS and "expected" in KNOWN_BUGS[case.id][1]
        assert case.expected.exists() != frozen_bug, case.id


@pytest.mark.parametrize("case_id", ["models/021_unknown_name", "data/102_text_in_numeric_column"])
def test_installed_cli_behaves_like_the_in_process_run(case_id):
    """`python3 -m ppl.cli` in a subprocess prints exactly what the in-process run prints."""
    case = next(c for c in CASES if c.id == case_id)
    env = dict(os.environ, PYTHONPATH=str(HERE.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "ppl.cli", *case.argv()], cwd=HERE / "errors",
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == case.expected.read_text(encoding="utf-8")
