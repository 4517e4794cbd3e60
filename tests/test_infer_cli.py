"""`ppl infer` end to end, as a user runs it (`python -m ppl.cli infer ...` from the repo root),
and the Python API's three data paths (CSV, DataFrame, dict of arrays).

Every command runs once, all of them concurrently, in a module fixture (each process pays for
importing numpy/scipy/pandas); the tests then check their exit codes, output and files.
"""

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ppl

ROOT = Path(__file__).parents[1]
MODELS = ROOT / "models"

SHAPES = {  # variable -> shape of its `mean` in the JSON document
    "lda": {"theta": [100, 10], "beta": [10, 500], "z": [12160, 10]},
    "gmm": {"pi": [6], "Lambda": [6, 2, 2], "mu": [6, 2], "z": [272, 6]},
    "latent_class": {"pi": [3], "phi": [3, 6, 3], "z": [300, 3]},
    "gaussian": {"tau": [], "mu": []},
    "linear_regression_known_noise": {"w": [3]},
    "linear_regression": {"alpha": [], "w": [3], "tau": []},
    "linear_regression_ard": {"alpha": [3], "w": [3], "tau": []},
    "beta_bernoulli": {"theta": []},
    "gamma_poisson": {"lambda": []},
    "eight_schools": {"mu": [], "tau": [], "theta": [8]},
}
TOP_KEYS = {"elbo", "iterations", "converged", "seconds", "trace", "factors", "variables"}
VARIABLE_KEYS = {"family", "shape", "mean", "sd", "q2.5", "q97.5"}


def model(name):
    return str(Path("models") / f"{name}.vim")


def data(name):
    return str(Path("models") / f"{name}.csv")


def commands(out: Path) -> dict:
    """Name → argument list after `ppl infer`."""
    runs = {f"fit:{name}": [model(name), data(name), "--seed", "0", "--output", str(out / f"{name}.json")]
            for name in SHAPES}  # lda first: the slowest
    g = [model("gaussian"), data("gaussian")]
    runs.update({
        "csv": [model("eight_schools"), data("eight_schools"), "--seed", "0", "--quiet",
                "--output", str(out / "summary.csv"), "--draws", "100", "--draws-output", str(out / "d.csv")],
        "max_iter_0": g + ["--max-iter", "0"],
        "txt": g + ["--output", str(out / "out.txt")],
        "set_unknown": g + ["--set", "NOPE=1"],
        "set_typo": g + ["--set", "kapa0=1"],
        "not_built": [model("ctm"), data("ctm"), "--method", "z=cvi"],
        "no_data": [model("gaussian"), str(out / "no_such_file.csv")],
    })
    return runs


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("infer_cli")


@pytest.fixture(scope="module")
def runs(out):
    def one(args):
        return subprocess.run([sys.executable, "-m", "ppl.cli", "infer", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)

    todo = commands(out)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {key: pool.submit(one, args) for key, args in todo.items()}
        return {key: f.result() for key, f in futures.items()}


# ---------------------------------------------------------------- every conjugate model

@pytest.mark.parametrize("name", list(SHAPES))
def test_infer_runs_and_prints_the_summary(runs, name):
    result = runs[f"fit:{name}"]
    assert result.returncode == 0, result.stderr
    assert "ELBO" in result.stdout
    assert "Traceback" not in result.stderr
    for variable in SHAPES[name]:
        assert variable in result.stdout


@pytest.mark.parametrize("name", list(SHAPES))
def test_infer_json_document(runs, out, name):
    assert runs[f"fit:{name}"].returncode == 0
    doc = json.loads((out / f"{name}.json").read_text())
    assert TOP_KEYS <= set(doc)
    assert isinstance(doc["elbo"], float) and np.isfinite(doc["elbo"])
    assert doc["elbo"] == doc["trace"][-1]
    assert doc["iterations"] == len(doc["trace"]) >= 1
    assert isinstance(doc["converged"], bool) and doc["seconds"] >= 0
    assert doc["factors"] and all(set(f) == {"factor", "variable", "rule", "reason"} for f in doc["factors"])
    assert {f["rule"] for f in doc["factors"]} == {"vmp"}
    assert set(doc["variables"]) == set(SHAPES[name])
    for variable, entry in doc["variables"].items():
        assert VARIABLE_KEYS <= set(entry), variable
        assert entry["shape"] == SHAPES[name][variable], variable
        assert np.array(entry["mean"], dtype=float).shape == tuple(entry["shape"]), variable
        if entry["family"] == "Categorical":  # √(p(1 − p)) of the mean: not written
            assert entry["sd"] is None, variable
        else:
            assert np.array(entry["sd"], dtype=object).shape == tuple(entry["shape"]), variable


def test_infer_gmm_json_reaches_the_chapter_bound(runs, out):
    doc = json.loads((out / "gmm.json").read_text())
    assert doc["elbo"] == pytest.approx(-443.298, abs=0.01)
    weights = np.array(doc["variables"]["pi"]["mean"])
    assert np.sum(weights > 0.01) == 2
    assert weights.sum() == pytest.approx(1.0, abs=1e-9)


def test_infer_csv_summary_and_draws(runs, out):
    result = runs["csv"]
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""  # --quiet
    summary = pd.read_csv(out / "summary.csv", comment="#")  # stansummary --csv layout
    assert list(summary.columns) == ["name", "Mean", "StdDev", "2.5%", "50%", "97.5%", "family"]
    assert summary["name"].tolist() == ["mu", "tau"] + [f"theta[{j}]" for j in range(1, 9)]
    post = ppl.load(MODELS / "eight_schools.vim").infer(MODELS / "eight_schools.csv", seed=0)
    api = post.summary()
    np.testing.assert_allclose(summary[["Mean", "StdDev", "2.5%", "97.5%"]].to_numpy(),
                               api[["mean", "sd", "q2.5", "q97.5"]].to_numpy(), rtol=1e-9)
    assert summary["50%"].iloc[0] == pytest.approx(post["mu"].quantiles([0.5])[0], rel=1e-12)
    assert (out / "summary.csv").read_text().startswith("# ppl posterior: model ")
    draws = pd.read_csv(out / "d.csv")
    assert len(draws) == 100
    assert list(draws.columns) == summary["name"].tolist()
    assert np.all(np.isfinite(draws.to_numpy()))
    assert draws["tau"].min() > 0


# ---------------------------------------------------------------- bad usage: exit 1, no traceback

def assert_user_error(result):
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr


def test_max_iter_zero(runs):
    result = runs["max_iter_0"]
    assert_user_error(result)
    assert "max_iter" in result.stderr


def test_output_with_an_unknown_suffix_writes_nothing(runs, out):
    result = runs["txt"]
    assert_user_error(result)
    assert "out.txt" in result.stderr
    assert not (out / "out.txt").exists()
    assert not list(out.glob(".out.txt*"))  # no temporary left behind either


def test_set_a_misspelt_constant_suggests_the_name(runs):
    result = runs["set_typo"]
    assert_user_error(result)
    assert "did you mean `kappa0`" in result.stderr


def test_set_an_unknown_constant_lists_the_constants(runs):
    result = runs["set_unknown"]
    assert_user_error(result)
    assert "NOPE" in result.stderr
    listed = all(c in result.stderr for c in ("mu0", "kappa0", "a0", "b0"))
    assert "did you mean" in result.stderr or listed, result.stderr


def test_a_rule_not_available_names_the_rule_and_the_factor(runs):
    result = runs["not_built"]
    assert_user_error(result)
    assert "rule `cvi`" in result.stderr
    assert "`z[t]`" in result.stderr
    assert "ctm.vim:38:3" in result.stderr


def test_missing_data_file(runs):
    result = runs["no_data"]
    assert_user_error(result)
    assert "no_such_file.csv" in result.stderr


# ---------------------------------------------------------------- the Python API's data paths

def test_dataframe_and_dict_give_the_csv_elbo():
    m = ppl.load(MODELS / "eight_schools.vim")
    table = pd.read_csv(MODELS / "eight_schools.csv")
    from_csv = m.infer(MODELS / "eight_schools.csv", seed=0)
    from_frame = m.infer(table, seed=0)
    from_dict = m.infer({"y": table["y"].to_numpy(float), "sigma": table["sigma"].to_numpy(float)}, seed=0)
    assert from_frame.elbo == pytest.approx(from_csv.elbo, abs=1e-9)
    assert from_dict.elbo == pytest.approx(from_csv.elbo, abs=1e-9)
    assert np.isfinite(from_csv.elbo)


def test_matrix_data_as_dataframe_and_dict():
    m = ppl.load(MODELS / "linear_regression.vim")
    table = pd.read_csv(MODELS / "linear_regression.csv")
    from_csv = m.infer(MODELS / "linear_regression.csv", seed=0)
    from_frame = m.infer(table, seed=0)
    from_dict = m.infer({"X": table[["x1", "x2", "x3"]].to_numpy(float), "y": table["y"].to_numpy(float)},
                        seed=0)
    assert from_frame.elbo == pytest.approx(from_csv.elbo, abs=1e-9)
    assert from_dict.elbo == pytest.approx(from_csv.elbo, abs=1e-9)
    np.testing.assert_allclose(from_dict["w"].mean, from_csv["w"].mean, atol=1e-12)


def test_categorical_data_as_dataframe():
    m = ppl.load(MODELS / "latent_class.vim")
    table = pd.read_csv(MODELS / "latent_class.csv")
    from_csv = m.infer(MODELS / "latent_class.csv", seed=0)
    from_frame = m.infer(table, seed=0)
    from_dict = m.infer({"x": table.to_numpy()}, seed=0)
    assert from_frame.elbo == pytest.approx(from_csv.elbo, abs=1e-9)
    assert from_dict.elbo == pytest.approx(from_csv.elbo, abs=1e-9)


@pytest.mark.parametrize("draws, rows", [([], 1000), (["--draws", "0"], 0), (["--draws", "7"], 7)])
def test_draws_output_without_draws_writes_the_default_number(tmp_path, draws, rows):
    """`--draws-output d.csv` alone wrote nothing and said nothing (the draws defaulted to 0),
    though --help gives 1000 as the default: it now writes 1000 draws, and `--draws 0` a header."""
    from ppl.cli import main
    path = tmp_path / "d.csv"
    assert main(["infer", str(MODELS / "eight_schools.vim"), str(MODELS / "eight_schools.csv"), "--seed", "0",
                 "--quiet", "--draws-output", str(path), *draws]) == 0
    table = pd.read_csv(path)
    assert len(table) == rows and list(table.columns)[:2] == ["mu", "tau"]


def test_help_names_every_data_input_and_the_time_limit(capsys):
    """`ppl infer --help` said the data were 'a CSV file' (Parquet files, globs and folders are
    read too) and printed --time-limit with no words."""
    from ppl.cli import main
    with pytest.raises(SystemExit):
        main(["infer", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "data the data: a CSV or Parquet file (on a cluster, a glob of them or a folder of Parquet files)" in text
    assert "--time-limit SECONDS stop after SECONDS of inference, not converged" in text


def test_check_with_data_refuses_what_infer_refuses(tmp_path, capsys):
    """`ppl check` showed a latent sd as a `cvi` edge and exited 0, and `ppl infer` then refused
    the model (E500): with data, check builds the problem infer would run and reports the same
    located error; without data it still shows the analysis."""
    from ppl.cli import main
    model = tmp_path / "m.vim"
    model.write_text("data y: real[N]\nmu ~ Normal(0, 1)\nsigma ~ Gamma(2, 1)\ny ~ Normal(mu, sd=sigma)\n")
    data = tmp_path / "d.csv"
    data.write_text("y\n1.0\n2.0\n0.5\n")
    assert main(["check", str(model), str(data)]) == 1
    checked = capsys.readouterr().err
    assert main(["infer", str(model), str(data), "--quiet"]) == 1
    assert capsys.readouterr().err == checked and "m.vim:4:1: model error [E500]" in checked
    assert main(["check", str(model)]) == 0
    assert "no conjugate pattern for Normal's sd `sigma`" in capsys.readouterr().out
