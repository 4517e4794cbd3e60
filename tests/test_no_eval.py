"""No `eval(` or `exec(` anywhere in ppl/: model text is interpreted as a tree, never run.

The source is scanned with `ast`, so the words in comments, docstrings and strings do not
count, while every call does: `eval(...)`, `builtins.exec(...)`, `df.eval(...)`, `pd.eval(...)`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ppl"
FORBIDDEN = {"eval", "exec"}


def forbidden_calls(source: str, filename: str = "<string>") -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in FORBIDDEN:
            found.append(f"{filename}:{node.lineno}: {ast.unparse(func)}(...)")
    return found


def _sources():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) >= 20, "the scan must see the whole package"
    return files


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_eval_or_exec_call(path):
    assert forbidden_calls(path.read_text(encoding="utf-8"), str(path)) == []


def test_scanner_finds_calls_and_ignores_text():
    source = '''
# eval(x) in a comment
"""exec(y) in a docstring"""
s = "eval(z)"
a = eval("1 + 1")
b = builtins.exec("pass")
c = frame.eval("a + b")
evaluate(1)
'''
    found = forbidden_calls(source)
    assert [f.split(": ")[1] for f in found] == ["eval(...)", "builtins.exec(...)", "frame.eval(...)"]
