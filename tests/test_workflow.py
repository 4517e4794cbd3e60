"""The Python workflow around a posterior: readable summaries (`--vars`, local variables and
switched-off components in one line), save and load checked against the model, plots, the
notebook view and the progress bar."""

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ppl
from ppl.cli import main
from ppl.diagnostics import ModelError, OptionError

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


@pytest.fixture(scope="module")
def gmm():
    return ppl.load(MODELS / "gmm.vim").infer(MODELS / "gmm.csv", seed=0, record_terms=True)


def test_summary_lists_globals_and_summarises_locals_and_dead_components(gmm):
    table = gmm.summary()
    live = np.flatnonzero(gmm["z"].mean.sum(axis=0) >= 0.5) + 1
    assert live.tolist() == [4, 5]
    expected = [f"pi[{k}]" for k in live] + [f"mu[{k},{d}]" for k in live for d in (1, 2)] + \
        [f"Lambda[{k},{i},{j}]" for k in live for i in (1, 2) for j in (1, 2)]
    assert sorted(table["variable"]) == sorted(expected)
    assert np.all(np.isfinite(table[["mean", "sd", "q2.5", "q97.5"]].to_numpy()))  # no sd inf, no 2.2e-308
    assert table.attrs["omitted"] == [
        "z: 272 local Categorical, not listed; --vars z to show",
        "z: components 1, 2, 3, 6 switched off (expected count < 0.5 rows); their pi, mu, Lambda keep the prior, "
        "not listed"]
    asked = gmm.summary(vars="z,mu*")
    assert len(asked) == 272 * 6 + 4 and asked.attrs["omitted"][0].startswith("z: components")
    np.testing.assert_allclose(asked[asked["variable"] == "z[3,4]"]["mean"], gmm["z"].mean[2, 3])


def test_unknown_vars_pattern_is_a_located_option_error(gmm):
    with pytest.raises(OptionError, match=r"--vars Lambd: no variable matches") as info:
        gmm.summary(vars="mu,Lambd")
    assert info.value.code == "E340" and "Lambda" in info.value.hint


@pytest.mark.parametrize("vars_", [["mu", 3], 5])
def test_vars_that_are_not_text_are_an_option_error(gmm, vars_):
    """`summary(vars=5)` was a TypeError and `vars=["mu", 3]` an AttributeError ('int' has no strip)."""
    with pytest.raises(OptionError) as info:
        gmm.summary(vars=vars_)
    assert info.value.code == "E340" and info.value.message == (
        f"vars={vars_!r}: give variable names or glob patterns, as one comma-separated text or a list of texts")


def test_cli_report_with_vars(capsys):
    args = ["infer", str(MODELS / "gmm.vim"), str(MODELS / "gmm.csv"), "--seed", "0"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "z[1,1]" not in out and "pi[4]" in out and "pi[1]" not in out
    assert out.rstrip().endswith("their pi, mu, Lambda keep the prior, not listed")
    assert main(args + ["--vars", "z"]) == 0
    out = capsys.readouterr().out
    assert "z[1,1]" in out and "(+1624 more)" in out and "pi[4]" not in out
    assert main(args + ["--vars", "nosuch"]) == 1
    assert "E340" in capsys.readouterr().err


@pytest.mark.parametrize("vars_, message", [("Lambd", "--vars Lambd: no variable matches"),
                                             ("", "--vars '': no pattern given")])
def test_a_vars_pattern_matching_no_variable_is_refused_before_the_fit(capsys, monkeypatch, vars_, message):
    """A typo in --vars cost the whole fit (it was checked on the posterior), and an empty --vars
    printed no table and no word: both are E340 before inference."""
    def no_fit(*args, **kwargs):
        raise AssertionError("the fit ran")
    monkeypatch.setattr(ppl.Model, "infer", no_fit)
    assert main(["infer", str(MODELS / "gmm.vim"), str(MODELS / "gmm.csv"), "--vars", vars_]) == 1
    assert capsys.readouterr().err.splitlines()[0] == f"option error [E340]: {message}"


def test_save_and_load_give_the_same_posterior(gmm, tmp_path):
    gmm.save(tmp_path / "post.json")
    back = ppl.Posterior.load(tmp_path / "post.json", MODELS / "gmm.vim")
    assert list(back.marginals) == list(gmm.marginals)
    for name, m in gmm.marginals.items():
        if m.name == "Categorical":  # rebuilt as log p from the summary's probabilities: equal to rounding
            np.testing.assert_allclose(back[name].mean, m.mean, rtol=1e-13, atol=0)
            continue
        np.testing.assert_array_equal(back[name].mean, m.mean)
        np.testing.assert_array_equal(back[name].sd, m.sd)  # inf sds of dead components too
    a, b = gmm.draws(5, seed=3), back.draws(5, seed=3)
    assert all(np.array_equal(a[n], b[n]) for n in a)
    assert back.elbo == gmm.elbo and back.trace == gmm.trace and back.term_trace == gmm.term_trace
    assert back.summary().equals(gmm.summary())
    assert back.dims == gmm.dims and back.origin["sha256"] == gmm.origin["sha256"]


def test_a_categorical_is_written_once(gmm, tmp_path):
    """z's probabilities are the summary's mean; its q points at them and its sd (√(p(1 − p))) is
    not written."""
    gmm.save(tmp_path / "post.json")
    doc = json.loads((tmp_path / "post.json").read_text())
    assert doc["q"]["variables"]["z"]["natural"] == {"log": "mean"}
    assert doc["variables"]["z"]["sd"] is None and doc["variables"]["z"]["mean"] == gmm["z"].mean.tolist()
    assert set(doc["q"]["variables"]["pi"]["natural"]) == {"shape", "data"}  # other families: their own numbers


def test_load_refuses_another_model_at_the_first_differing_line(gmm, tmp_path):
    gmm.save(tmp_path / "post.json")
    text = (MODELS / "gmm.vim").read_text().replace("const alpha0 = 0.001", "const alpha0 = 0.01")
    (tmp_path / "other.vim").write_text(text)
    with pytest.raises(ModelError) as info:
        ppl.Posterior.load(tmp_path / "post.json", tmp_path / "other.vim")
    line = text.splitlines().index("const alpha0 = 0.01") + 1
    assert info.value.code == "E343" and info.value.span.line == line
    assert str(info.value).startswith(f"{tmp_path / 'other.vim'}:{line}:1: model error [E343]")
    with pytest.raises(ModelError, match="constants") as info:
        ppl.Posterior.load(tmp_path / "post.json", ppl.load(MODELS / "gmm.vim", set={"K": 3}))
    assert info.value.code == "E344"
    (tmp_path / "not.json").write_text(json.dumps({"elbo": 1}))
    with pytest.raises(OptionError, match="not a posterior saved by ppl"):
        ppl.Posterior.load(tmp_path / "not.json")


def _nontrivial_png(path):
    from matplotlib.image import imread
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 400
    colours = np.unique(image[..., :3].reshape(-1, 3), axis=0)
    assert len(colours) > 50  # lines, bars, text: not a blank canvas
    return image


@pytest.mark.parametrize("kind", ["elbo", "marginals", "components"])
def test_each_plot_renders_to_png(gmm, kind, tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    fig = gmm.plot(kind, path=tmp_path / f"{kind}.png")
    _nontrivial_png(tmp_path / f"{kind}.png")
    titles = " ".join(t.get_text() for sub in fig.subfigs for t in [sub._suptitle] if t is not None)
    assert {"elbo": "convergence", "marginals": "marginals", "components": "components"}[kind] in titles


def test_ppl_plot_command(tmp_path):
    post = tmp_path / "post.json"
    assert main(["infer", str(MODELS / "eight_schools.vim"), str(MODELS / "eight_schools.csv"), "--seed", "0",
                 "--quiet", "--trace-terms", "--output", str(post)]) == 0
    assert main(["plot", str(post), "--vars", "mu,tau", "-o", str(tmp_path / "fig.png")]) == 0
    _nontrivial_png(tmp_path / "fig.png")
    assert main(["plot", str(post), "--kind", "components", "-o", str(tmp_path / "c.png")]) == 1  # no mixture


def test_a_plot_file_that_cannot_be_written_is_an_option_error(tmp_path, capsys):
    """`-o fig.xyz` and `-o no/such/folder/fig.png` were matplotlib's ValueError and
    FileNotFoundError after the drawing (internal errors, exit 3); `path=` from Python too."""
    post = tmp_path / "post.json"
    assert main(["infer", str(MODELS / "beta_bernoulli.vim"), str(MODELS / "beta_bernoulli.csv"), "--quiet",
                 "--output", str(post)]) == 0
    for target, message in ((tmp_path / "fig.xyz", "use a .png or .svg or .pdf"),
                            (tmp_path / "no" / "fig.png", f"folder {tmp_path / 'no'} does not exist")):
        assert main(["plot", str(post), "-o", str(target)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"option error [{'E321' if target.suffix == '.xyz' else 'E320'}]: -o {target}: ")
        assert message in err and "Traceback" not in err
        with pytest.raises(OptionError) as info:
            ppl.Posterior.load(post).plot(path=target)
        assert info.value.message.startswith(f"path {target}: ") and message in info.value.message


def test_a_model_of_local_variables_only_plots_without_marginals(tmp_path):
    """Poisson MF's theta and beta are both local, so no variable is listed by default: the
    marginals plot took max() of nothing, an internal error of `ppl plot`. "all" now leaves
    it out; asked for by name it is E345, pointing at --vars; with --vars it draws."""
    import matplotlib
    matplotlib.use("Agg")
    post = ppl.load(MODELS / "poisson_mf.vim").infer(MODELS / "poisson_mf.csv", seed=0, max_iter=20)
    fig = post.plot(path=tmp_path / "all.png")
    assert [sub._suptitle.get_text() for sub in fig.subfigs] == ["convergence"]  # the ELBO plot alone
    with pytest.raises(OptionError) as info:
        post.plot("marginals")
    assert info.value.code == "E345" and info.value.message == (
        "plot kind 'marginals': no variable is listed by default (theta, beta are local); name them with --vars")
    fig = post.plot("marginals", vars="theta", path=tmp_path / "theta.png")
    assert fig.subfigs[0].axes[0].get_title() == "theta[1,1]" and (tmp_path / "theta.png").stat().st_size > 1000


AR_CHAIN = """data y: bool[T]
a ~ Normal(0, 1)
x[1] ~ Normal(0, 1)
for t in 2..T { x[t] ~ Normal(a * x[t-1], 10.0) }
for t in 1..T { y[t] ~ Bernoulli(logistic(x[t])) }
"""


def test_chains_plot_their_marginals(tmp_path):
    """A Gaussian chain's statement reads x[t-1] beside x[t]: the prior listed for x was its first
    statement's alone, improper past x[1], and drawing from it was a LinAlgError (fuzz seed
    5000000); x now has no prior line. A categorical chain's draws are codes, and the elements
    drawn were read off its probabilities' axes: an IndexError (seed 5000058)."""
    import matplotlib
    matplotlib.use("Agg")
    post = ppl.compile(AR_CHAIN).infer({"y": np.array([0, 1, 0, 1, 1])}, seed=0)
    assert "x" not in post.priors and "a" in post.priors
    fig = post.plot("marginals", path=tmp_path / "ar.png")
    assert [ax.get_title() for ax in fig.subfigs[0].axes if ax.axison][1:] == [f"x[{t}]" for t in range(1, 6)]
    hmm = ppl.load(MODELS / "hmm.vim").infer(MODELS / "hmm.csv", seed=0, max_iter=5)
    fig = hmm.plot("marginals", vars="z", path=tmp_path / "hmm.png")
    assert [ax.get_title() for ax in fig.subfigs[0].axes][:3] == ["z[1]", "z[2]", "z[3]"]


def test_a_variable_drawn_by_several_statements_has_their_sum_as_its_prior():
    """`x[1] ~ Normal(0, 1)` and `x[t] ~ Normal(0, 2)` for the rest: the prior plotted is both
    (precision 1, then 2), where the first statement's alone left x[2:] with precision 0."""
    text = """data y: bool[T]
x[1] ~ Normal(0, 1)
for t in 2..T { x[t] ~ Normal(0, 2) }
for t in 1..T { y[t] ~ Bernoulli(logistic(x[t])) }
"""
    post = ppl.compile(text).infer({"y": np.array([0, 1, 1, 0])}, seed=0)
    np.testing.assert_array_equal(post.priors["x"], [[0, -0.5], [0, -1], [0, -1], [0, -1]])


def test_notebook_view_shows_the_table_and_what_it_leaves_out(gmm):
    html = gmm._repr_html_()
    assert html.count("<tr>") == 1 + 14 and "<td>pi[4]</td>" in html
    assert "z: 272 local Categorical" in html
    assert repr(gmm).startswith("Posterior(elbo=-443.29")


def test_progress_bar_shows_sweeps_elbo_and_times():
    from ppl.report.progress import Progress
    stream = io.StringIO()
    progress = Progress(50, stream=stream, delay=0.0)
    for sweep in range(1, 8):
        progress(sweep, -100.0 + sweep)
    progress.close()
    text = stream.getvalue()
    assert "7/50" in text and "ELBO -93.000000" in text and "0:00:00" in text


def test_no_progress_bar_and_no_rich_off_a_terminal():
    code = ("import sys; from ppl.cli import main; "
            f"main(['infer', r'{MODELS / 'gaussian.vim'}', r'{MODELS / 'gaussian.csv'}']); "
            "print('rich' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.rstrip().endswith("False") and result.stderr == ""
