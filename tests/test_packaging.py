"""The installed package is the one the tests run: every module ships, the grammar included."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "ppl").rglob("__init__.py")}
    assert found <= listed, f"add to pyproject.toml: {sorted(found - listed)}"


def _installed_ppl():
    script = Path(sys.executable).with_name("ppl")
    return str(script) if script.exists() else shutil.which("ppl")


@pytest.mark.parametrize("model", sorted((ROOT / "models").glob("*.vim")), ids=lambda p: p.stem)
def test_installed_ppl_checks_every_model_from_another_folder(model, tmp_path):
    """Run the console script from a folder without the sources: the wheel must carry the grammar."""
    script = _installed_ppl()
    if script is None:
        pytest.skip("the `ppl` console script is not installed (python -m pip install .)")
    done = subprocess.run([script, "check", str(model), str(model.with_suffix(".csv"))],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "factor" in done.stdout and "rule" in done.stdout
