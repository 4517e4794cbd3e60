"""Every ```ppl example in docs/ checks, with the ```csv block that follows it as its data, and
every example that has data runs `infer` to the end (a documented example that crashes is a bug)."""

import re
from pathlib import Path

import numpy as np
import pytest

import ppl

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```ppl\n(.*?)```(?:\s*```csv\n(.*?)```)?", re.S)


def _examples():
    for page in sorted(DOCS.rglob("*.md")):
        for i, (model, csv) in enumerate(BLOCK.findall(page.read_text(encoding="utf-8"))):
            yield pytest.param(model, csv, id=f"{page.relative_to(DOCS)}#{i + 1}")


# Examples that show a construct the engine does not run yet: each must refuse with a located E500,
# in `infer` and in `check` with data (which builds what infer would run); without data check analyses it.
NOT_RUN = {"analyzer.md#1", "language.md#6", "language.md#16"}


@pytest.mark.parametrize("model,csv", list(_examples()))
def test_example_checks(model, csv, tmp_path, request):
    compiled = ppl.compile(model, "example.vim")
    compiled.check_report()
    if csv:
        (tmp_path / "data.csv").write_text(csv)
        if request.node.callspec.id in NOT_RUN:
            with pytest.raises(ppl.ModelError) as info:
                compiled.check_report(tmp_path / "data.csv")
            assert info.value.code == "E500" and "example.vim:" in str(info.value)
        else:
            compiled.check_report(tmp_path / "data.csv")


@pytest.mark.parametrize("model,csv", [p for p in _examples() if p.values[1]])
def test_example_with_data_infers(model, csv, tmp_path, request):
    (tmp_path / "data.csv").write_text(csv)
    compiled = ppl.compile(model, "example.vim")
    if request.node.callspec.id in NOT_RUN:
        with pytest.raises(ppl.ModelError) as error:
            compiled.infer(tmp_path / "data.csv", seed=1, max_iter=50)
        assert error.value.code == "E500" and error.value.span is not None
        return
    posterior = compiled.infer(tmp_path / "data.csv", seed=1, max_iter=50)
    assert np.isfinite(posterior.elbo)


def test_gp_regression_example_is_the_closed_form(tmp_path):
    """docs/language.md §15 exactly as written (a vectorised `y ~ Normal(f, 25.0)` over the whole
    vector f): the posterior mean is K(K + σ²I)⁻¹y with σ² = 1/25."""
    page = (DOCS / "language.md").read_text(encoding="utf-8")
    model, csv = next((m, c) for m, c in BLOCK.findall(page) if "rbf(x, ell, 1.0)" in m)
    (tmp_path / "gp.csv").write_text(csv)
    posterior = ppl.compile(model).infer(tmp_path / "gp.csv", seed=0)
    x, y = np.loadtxt(tmp_path / "gp.csv", delimiter=",", skiprows=1).T
    k = np.exp(-(x[:, None] - x[None, :]) ** 2 / (2 * 1.5 ** 2)) + 1e-4 * np.eye(len(x))
    np.testing.assert_allclose(posterior["f"].mean, k @ np.linalg.solve(k + np.eye(len(x)) / 25.0, y), atol=1e-4)
