"""The catalogue of bad inputs (benchmarks/reliability_cases.py, docs/reliability.md): every error
code that ppl's source raises has a case that prints it, here or in tests/errors, or a reason why
no input reaches it; and each case prints the code it names."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = str(ROOT / "benchmarks")
sys.path[:0] = [BENCHMARKS, str(ROOT / "tests" / "errors")]
try:
    import regenerate
    import reliability_catalogue
    from reliability_cases import CASES, UNREACHABLE
finally:  # benchmarks/lda.py would pass for the `lda` package in later tests
    sys.path.remove(BENCHMARKS)

CLUSTER = ("--workers", "--dask")  # a local Dask cluster each: run by the catalogue script only


def defined_codes() -> set[str]:
    """Every code written as a string in ppl's source (`"E406"`)."""
    return {code for path in (ROOT / "ppl").rglob("*.py")
            for code in re.findall(r'"(E\d{3})"', path.read_text(encoding="utf-8"))}


def test_every_error_code_has_a_case_or_a_reason():
    golden = {case.code for case in regenerate.cases()}
    cased = {case.code for case in CASES}
    defined = defined_codes()
    assert defined - golden - cased - set(UNREACHABLE) == set(), "codes with no case and no reason"
    assert set(UNREACHABLE) & (golden | cased) == set(), "a code with a case is not unreachable"
    assert set(UNREACHABLE) <= defined, "a reason for a code ppl no longer raises"


@pytest.mark.parametrize("case", [c for c in CASES if not any(flag in c.command for flag in CLUSTER)],
                         ids=lambda c: f"{c.code}-{c.what[:40]}")
def test_each_case_prints_its_code(case):
    code, stderr = reliability_catalogue.run_case(case)
    assert reliability_catalogue.problem(code, stderr, case.code) == "", stderr
    assert code in ((0, 2) if case.code is None else (1,))  # no code: the run completes, or bad usage
