"""Zero internal errors (issue 14): inputs that used to end in a traceback, each pinned here with the
exit code, the error code and its location, or with the run that now completes."""

from __future__ import annotations

import numpy as np
import pytest

import ppl

GP_CLASSIFICATION = """\
const ell = 1.5
data x: real[N]
data y: bool[N]
f ~ MvNormal(zeros(N), cov=rbf(x, ell, 1.0) + 0.0001 * eye(N))
y ~ Bernoulli(logistic(f)) {note}
"""


@pytest.fixture
def gp_data(tmp_path):
    path = tmp_path / "gp.csv"
    path.write_text("x,y\n0,1\n1,1\n2,0\n3,0\n")
    return path


@pytest.mark.parametrize("note", ["@cvi(form=site)", "@cvi(minibatch=2)"])
def test_gp_classification_cvi_forms_run_and_agree_with_ncvmp(note, gp_data):
    """A whole-vector read `logistic(f)` in a vectorised statement reads coordinate n at row n,
    under every CVI form: the posterior means agree with the exact-gradient (ncvmp) fixed point
    in sign and to within Monte Carlo noise."""
    exact = ppl.compile(GP_CLASSIFICATION.format(note="")).infer(gp_data, seed=0)
    noisy = ppl.compile(GP_CLASSIFICATION.format(note=note)).infer(gp_data, seed=0, max_iter=300)
    assert np.all(np.sign(noisy["f"].mean) == np.sign(exact["f"].mean))
    np.testing.assert_allclose(noisy["f"].mean, exact["f"].mean, atol=0.1)


# ---- non-conjugate steps from a wide start ---------------------------------------------

POISSON = """\
const D = 5
data x: real[N, D] from x1..x5
data y: int[N]
w ~ MvNormal(zeros(D), {precision} * eye(D))
for n in 1..N {{ y[n] ~ Poisson(exp(dot(w, x[n]))) {note} }}
"""


def _poisson_data(scale):
    """Rows of squared norm about 130 (times scale²): from the prior N(0, I) the expected rate
    E[exp(x·w)] = exp(|x|²/2) is about 1e28."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 5)) * np.sqrt(130 / 5)
    y = rng.poisson(np.exp(np.clip(x @ np.full(5, 0.1), -5, 5)))
    return {"x": x * scale, "y": y}


@pytest.mark.parametrize("note", ["", "@ncvmp(damping=0.5)", "@cvi(samples=0)"])
def test_poisson_regression_from_a_wide_prior_reaches_the_safe_start_fixed_point(note):
    """The same model written with x/10 and w' = 10 w (prior precision 0.01) starts where the
    expected rates are moderate; q is Gaussian, so the reparametrisation is exact and both runs
    must reach one fixed point: mean(w) = mean(w') / 10, sd(w) = sd(w') / 10."""
    wide = ppl.compile(POISSON.format(precision=1.0, note=note)).infer(_poisson_data(1.0), seed=0,
                                                                     max_iter=2000, tol=1e-10)
    safe = ppl.compile(POISSON.format(precision=0.01, note=note)).infer(_poisson_data(0.1), seed=0,
                                                                      max_iter=2000, tol=1e-10)
    assert wide.converged and safe.converged
    np.testing.assert_allclose(wide["w"].mean, safe["w"].mean / 10, rtol=1e-5)
    np.testing.assert_allclose(wide["w"].sd, safe["w"].sd / 10, rtol=1e-4)


# ---- files and options ------------------------------------------------------------------

def _cli(argv, cwd=None):
    """(exit code, stdout, stderr) of ppl's CLI run in-process."""
    import contextlib
    import io

    from ppl import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def gp_files(tmp_path, gp_data):
    model = tmp_path / "gpc.vim"
    model.write_text(GP_CLASSIFICATION.format(note="@cvi(samples=8)"))
    return model, gp_data


@pytest.mark.parametrize("options,code,message", [
    (["--seed", "-1"], "E325", "--seed -1"),
    (["--draws", "-3", "--draws-output", "d.csv"], "E326", "--draws -3"),
    (["--time-limit", "0"], "E327", "--time-limit 0"),
    (["--output", "."], "E320", "this is a folder"),
    (["--output", "no/such/folder/post.json"], "E320", "does not exist"),
    (["--output", "post.txt"], "E321", "use a .json or .csv"),
    (["--output", "{model}"], "E321", "use a .json or .csv"),
    (["--output", "{copy}"], "E328", "is an input file"),
    (["--draws", "2", "--draws-output", "{copy}"], "E328", "is an input file"),
])
def test_bad_infer_options_are_refused_before_inference(options, code, message, gp_files, tmp_path, monkeypatch):
    """Exit 1 with the option's error code, no location, and no inference run (the posterior
    is never built: `Model.infer` is replaced by a function that fails the test)."""
    model, data = gp_files
    copy = tmp_path / "copy.csv"
    copy.write_text(data.read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ppl.Model, "infer", lambda *a, **k: pytest.fail("inference ran"))
    argv = ["infer", model, copy] + [o.format(model=model, copy=copy) for o in options]
    exit_code, _, stderr = _cli(argv)
    assert exit_code == 1
    assert stderr.startswith(f"option error [{code}]: ") and message in stderr.splitlines()[0], stderr
    assert copy.read_text() == data.read_text()


@pytest.mark.parametrize("options,code,message", [
    ({"seed": 1.5}, "E325", "seed must be a non-negative integer or None, got 1.5"),
    ({"seed": -1}, "E325", "seed must be a non-negative integer or None, got -1"),
    ({"seed": "a"}, "E325", "seed must be a non-negative integer or None, got 'a'"),
    ({"time_limit": 0}, "E327", "time_limit (--time-limit) must be a positive number of seconds, got 0"),
    ({"time_limit": -1.0}, "E327", "time_limit (--time-limit) must be a positive number of seconds, got -1.0"),
    ({"time_limit": "5"}, "E327", "time_limit (--time-limit) must be a positive number of seconds, got '5'"),
])
def test_bad_infer_arguments_from_python_are_option_errors(options, code, message):
    """What the CLI refuses (E325, E327) Model.infer refused by a numpy traceback (a seed) or
    ran one sweep of (a time limit of 0 or less)."""
    with pytest.raises(ppl.OptionError) as info:
        ppl.load("models/beta_bernoulli.vim").infer("models/beta_bernoulli.csv", **options)
    assert info.value.code == code and info.value.message == message


def test_a_run_stopped_by_its_time_limit_says_so():
    """The report of a run cut by time_limit said only 'did NOT converge (raise --max-iter ...)';
    then the note said why, but the status line still advised raising --max-iter."""
    from ppl.report.summary import infer_report
    post = ppl.load("models/gmm.vim").infer("models/gmm.csv", seed=0, time_limit=1e-9)
    assert not post.converged and post.iterations == 1
    assert post.notes[-1] == "the time limit (1e-09 s) stopped the run after sweep 1, before --max-iter"
    assert post.convergence.stopped_by == "time limit"
    assert "(did NOT converge (raise --time-limit or check the model))" in infer_report(post)
    short = ppl.load("models/gmm.vim").infer("models/gmm.csv", seed=0, max_iter=2)
    assert "(did NOT converge (raise --max-iter or check the model))" in infer_report(short)
    svi = ppl.load("models/lda.vim").infer("models/lda.csv", seed=0, schedule="svi(batch=10)", time_limit=1e-9)
    assert svi.notes[-1] == "the time limit (1e-09 s) stopped the run after step 1, before --max-iter"
    assert "stopped at: the time limit, before the stopping rule was met" in infer_report(svi)


def test_running_out_of_memory_is_a_user_error_not_a_bug(gp_files, monkeypatch):
    """`--set K=100000000` asks numpy for 25 GiB: the MemoryError was reported as an internal
    error (a bug in ppl, exit 3) with a traceback. It is exit 1 with what ran out and why."""
    model, data = gp_files

    def allocate(*args, **kwargs):
        raise MemoryError("Unable to allocate 25.3 GiB for an array with shape (272, 100000000) and data type bool")
    monkeypatch.setattr(ppl.Model, "infer", allocate)
    exit_code, _, stderr = _cli(["infer", model, data])
    assert exit_code == 1 and "Traceback" not in stderr
    assert stderr.splitlines() == [
        "ppl: out of memory: Unable to allocate 25.3 GiB for an array with shape (272, 100000000) and data type bool",
        "  hint: a size of the model or the data (a constant such as K, --set, a number of levels) may be larger "
        "than meant; else run on a machine with more memory, or stream the data (--stream, docs/scale.md)"]


def test_a_model_with_nothing_in_q_converges_after_one_sweep_with_the_exact_likelihood():
    """Every variable observed: q is empty and the ELBO is the log likelihood. The run went to
    max_iter and said 'did NOT converge'."""
    from scipy import stats
    post = ppl.compile("data y: real[N]\ny ~ Normal(0, 1)\n").infer({"y": np.array([1.0, -0.5])})
    assert post.converged and post.iterations == 1
    assert post.elbo == pytest.approx(stats.norm.logpdf([1.0, -0.5]).sum(), rel=1e-12)
    assert post.convergence.describe() == "ELBO change 0, est. 0 nats from the fixed point; largest mean change 0 sd"


@pytest.mark.parametrize("text", ["", "# a comment\n", "data y: real[N]\n"])
def test_a_model_without_a_statement_to_fit_is_e814(text):
    """An empty model 'ran' 500 sweeps to ELBO 0 and said it did not converge."""
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(text, "m.vim").infer({"y": np.array([1.0])})
    assert info.value.code == "E814" and info.value.message == (
        "m.vim has no `~` statement: there is nothing to fit")


@pytest.mark.parametrize("text, kind", [(123, "an int"), (None, "a NoneType"), (b"mu ~ Normal(0, 1)", "a bytes")])
def test_model_text_that_is_not_a_str_is_e001(text, kind):
    """ppl.compile(123) was an AttributeError from the parser, bytes a TypeError from re."""
    with pytest.raises(ppl.ModelError) as info:
        ppl.compile(text)
    assert info.value.code == "E001" and info.value.message == (
        f"cannot read a model from {kind}: give its text as a str (decode bytes first), or a path to ppl.load")


def test_unwritable_output_folder_is_refused_before_inference(gp_files, tmp_path, monkeypatch):
    import os
    model, data = gp_files
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        monkeypatch.setattr(ppl.Model, "infer", lambda *a, **k: pytest.fail("inference ran"))
        exit_code, _, stderr = _cli(["infer", model, data, "--output", folder / "post.json"])
    finally:
        folder.chmod(0o700)
    assert exit_code == 1 and stderr.startswith("option error [E320]") and "cannot write" in stderr


def test_output_file_respects_the_umask(gp_files, tmp_path):
    import os
    import stat
    model, data = gp_files
    old = os.umask(0o027)
    try:
        exit_code, _, _ = _cli(["infer", model, data, "--seed", "1", "--quiet", "--output", tmp_path / "post.json",
                                "--draws", "3", "--draws-output", tmp_path / "draws.csv"])
    finally:
        os.umask(old)
    assert exit_code == 0
    for name in ("post.json", "draws.csv"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "a temporary file was left behind"


def test_graph_refuses_an_unknown_rule(gp_files):
    model, _ = gp_files
    exit_code, stdout, stderr = _cli(["graph", model, "--method", "y=magic"])
    assert exit_code == 1 and stdout == ""
    assert stderr.startswith("option error [E282]: --method y=magic: unknown rule `magic`")


def test_infer_usage_shows_data_as_required(gp_files):
    model, _ = gp_files
    exit_code, _, stderr = _cli(["infer", model])
    assert exit_code == 2
    assert "model data\n" in stderr and "[data]" not in stderr
    assert "the following arguments are required: data" in stderr


def test_version_flag():
    exit_code, stdout, _ = _cli(["--version"])
    assert exit_code == 0 and stdout == f"ppl {ppl.__version__}\n"


def test_model_file_that_is_not_utf8(tmp_path, gp_data):
    model = tmp_path / "latin1.vim"
    model.write_bytes("# café\nmu ~ Normal(0, 1)\n".encode("latin-1"))
    exit_code, _, stderr = _cli(["check", model])
    assert exit_code == 1
    assert stderr.startswith("model error [E001]: cannot read model file") and "byte 0xe9 at offset 5" in stderr


# ---- the JSON record and reproducibility -----------------------------------------------

def test_json_records_the_run_and_the_same_seed_gives_the_same_json(gp_files, tmp_path):
    """Version, seed, options and input paths are recorded; two runs with one seed write the
    same document apart from the timing (`seconds`); another seed gives another document."""
    import json
    model, data = gp_files
    documents = []
    for seed, name in ((7, "a.json"), (7, "b.json"), (8, "c.json")):
        exit_code, _, _ = _cli(["infer", model, data, "--seed", seed, "--quiet", "--output", tmp_path / name,
                                "--set", "ell=1.5", "--max-iter", "40"])
        assert exit_code == 0
        document = json.loads((tmp_path / name).read_text())
        assert document.pop("seconds") > 0
        documents.append(document)
    run = documents[0]["run"]
    assert run == {"ppl": ppl.__version__, "seed": 7, "inputs": {"model": str(model), "data": str(data)},
                   "options": {"set": {"ell": 1.5}, "method": {}, "max_iter": 40, "tol": 1e-6, "mean_tol": 1e-5,
                               "restarts": 1, "time_limit": None, "draws": 0}}
    assert documents[0] == documents[1]
    assert documents[0]["variables"] != documents[2]["variables"]


# ---- interrupts -------------------------------------------------------------------------

def test_keyboard_interrupt_from_progress_keeps_the_last_completed_sweep(gp_data):
    """A KeyboardInterrupt raised by the progress callback after sweep 3 ends the run there: the
    posterior is that of 3 whole sweeps (the same as a run with max_iter=3), marked interrupted."""
    model = ppl.compile(GP_CLASSIFICATION.format(note=""))

    def progress(iteration, elbo):
        if iteration == 3:
            raise KeyboardInterrupt

    stopped = model.infer(gp_data, seed=0, progress=progress, restarts=2)
    three = model.infer(gp_data, seed=0, max_iter=3)
    assert stopped.interrupted and not stopped.converged and stopped.status == "interrupted, not converged"
    assert ", 3 sweeps, interrupted, not converged, variables=" in repr(stopped)  # repr said "not converged"
    assert stopped.iterations == 3 and stopped.elbo == three.elbo
    np.testing.assert_array_equal(stopped["f"].mean, three["f"].mean)


def test_ctrl_c_during_infer_exits_130_and_writes_the_last_posterior(gp_files, tmp_path, monkeypatch):
    """A real SIGINT in the middle of sweep 4 (sent from the progress hook): the run stops at the
    end of that sweep, the JSON is written with status "interrupted, not converged", exit 130."""
    import json
    import signal

    from ppl.interrupt import SweepInterrupt
    model, data = gp_files
    wrapped = SweepInterrupt.__call__

    def call(self, iteration, elbo):
        if iteration == 4:
            signal.raise_signal(signal.SIGINT)
        wrapped(self, iteration, elbo)

    monkeypatch.setattr(SweepInterrupt, "__call__", call)
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when the suite runs as a background job
    exit_code, stdout, _ = _cli(["infer", model, data, "--seed", "3", "--output", tmp_path / "post.json",
                                 "--tol", "1e-300"])
    assert exit_code == 130
    document = json.loads((tmp_path / "post.json").read_text())
    assert document["status"] == "interrupted, not converged" and document["iterations"] == 4
    assert "interrupted after sweep 4, not converged" in document["notes"]
    assert "(interrupted, not converged)" in stdout
    assert signal.getsignal(signal.SIGINT) is before  # restored


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="needs Linux /proc")
def test_output_in_a_folder_nobody_can_write_is_refused_before_inference(gp_files, monkeypatch):
    model, data = gp_files
    monkeypatch.setattr(ppl.Model, "infer", lambda *a, **k: pytest.fail("inference ran"))
    exit_code, _, stderr = _cli(["infer", model, data, "--output", "/proc/post.json"])
    assert exit_code == 1 and stderr.startswith("option error [E320]: --output /proc/post.json: cannot write in /proc")
