"""Every ```ppl example in docs/ checks, with the ```csv block that follows it as its data."""

import re
from pathlib import Path

import pytest

import ppl

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```ppl\n(.*?)```(?:\s*```csv\n(.*?)```)?", re.S)


def _examples():
    for page in sorted(DOCS.rglob("*.md")):
        for i, (model, csv) in enumerate(BLOCK.findall(page.read_text(encoding="utf-8"))):
            yield pytest.param(model, csv, id=f"{page.relative_to(DOCS)}#{i + 1}")


@pytest.mark.parametrize("model,csv", list(_examples()))
def test_example_checks(model, csv, tmp_path):
    compiled = ppl.compile(model, "example.vim")
    if csv:
        (tmp_path / "data.csv").write_text(csv)
        compiled.check_report(tmp_path / "data.csv")
    else:
        compiled.check_report()
