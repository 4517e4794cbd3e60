"""Batch VMP and SVI on a Dask cluster (ppl.cluster): the same arithmetic as one process, a lost
worker losing nothing, partitioned data bound with `bind`'s checks. One LocalCluster of two
worker processes serves every test of the module."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from distributed import Client

import ppl
import ppl.cluster.batch as batch
import ppl.cluster.worker as worker
import ppl.infer.accelerate as squarem_module
from ppl.cli import main
from ppl.cluster.connect import local_cluster
from ppl.data.stream import GroupedSource
from ppl.diagnostics import DataError, OptionError
from ppl.infer import Options, build_problem, run
from ppl.infer.schedule.plan import plan_for
from ppl.infer.schedule.steps import batch_e_step, data_factors, start_at

START = 40  # groups of the starting fit: a start far enough from the optimum for a trace


@pytest.fixture(scope="module")
def client():
    cluster = local_cluster(2)
    with cluster, Client(cluster) as connected:
        yield connected


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """models/gmm.csv as 4 CSV files; models/lda.csv as 4 Parquet files of 25 documents each."""
    folder = tmp_path_factory.mktemp("parts")
    gmm = pd.read_csv("models/gmm.csv")
    for i, rows in enumerate(np.split(np.arange(len(gmm)), [50, 120, 200])):  # 50, 70, 80 and 72 rows
        gmm.iloc[rows].to_csv(folder / f"gmm{i}.csv", index=False)
    lda = pd.read_csv("models/lda.csv")
    (folder / "lda").mkdir()
    for i, docs in enumerate(np.array_split(lda.doc.unique(), 4)):
        lda[lda.doc.isin(docs)].to_parquet(folder / "lda" / f"part{i}.parquet")
    return {"gmm": str(folder / "gmm*.csv"), "lda": str(folder / "lda")}


@pytest.fixture
def small_start(monkeypatch):
    monkeypatch.setattr(batch, "START_GROUPS", START)


def one_process(model, csv: str, seed: int, max_iter: int, tol: float = 1e-12, accelerate=False):
    """The engine in this process, on all the data, from the start a cluster run makes (with
    SQUAREM: every local refitted after a move, as the partitions refit theirs)."""
    dataset = model.bind(csv)
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    plan = plan_for(problem.model, problem.scopes, problem.latent)
    source = GroupedSource.from_dataset(model.checked, dataset, plan.group_column)

    def start(problem, rng):
        return start_at(problem, rng, batch.start_globals(problem, rng, source, START), plan)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(squarem_module, "SMALL_LOCAL", -1)
        return run(problem, Options(seed=seed, max_iter=max_iter, tol=tol, mean_tol=1e-12, accelerate=accelerate),
                   initial=start)


@pytest.mark.parametrize("name", ["gmm", "lda"])
@pytest.mark.parametrize("squarem", [False, None])
def test_batch_vmp_over_four_partitions_is_the_one_process_trace(client, files, small_start, name, squarem):
    model = ppl.load(f"models/{name}.vim")
    post = model.infer(files[name], client=client, seed=3, max_iter=8, tol=1e-12, mean_tol=1e-12, accelerate=squarem)
    reference = one_process(model, f"models/{name}.csv", 3, 8, accelerate=squarem)
    assert len(post.trace) == len(reference.trace) > 3
    np.testing.assert_allclose(post.trace, reference.trace, rtol=1e-10, atol=0)
    assert np.all(np.diff(post.trace) >= -1e-9 * np.abs(post.trace[1:]))
    assert "4 partitions" in post.notes[-1]


def test_a_softmax_on_a_cluster_takes_the_shift_step_of_the_one_process_sweep(client):
    """The class weights of a softmax move along their shift after their update, as in batch_sweep:
    without it the cluster's sweeps crawled (759 sweeps on iris against 71)."""
    model = ppl.load("models/multinomial_logistic.vim")
    options = {"seed": 3, "max_iter": 8, "tol": 1e-12, "mean_tol": 1e-12, "accelerate": False}
    post = model.infer("models/multinomial_logistic.csv", client=client, **options)
    reference = model.infer("models/multinomial_logistic.csv", **options)
    assert len(post.trace) == len(reference.trace) == 8
    np.testing.assert_allclose(post.trace, reference.trace, rtol=1e-10, atol=0)


def test_a_rejected_step_puts_the_partitions_locals_back(client, files, small_start, monkeypatch):
    """Every SQUAREM step rejected: the globals go back to the plain point on the client, the
    locals to theirs on the partitions (`restore_task`), and the sweeps go on as in one process."""
    monkeypatch.setattr(squarem_module, "worse", lambda *args: True)
    model = ppl.load("models/gmm.vim")
    post = model.infer(files["gmm"], client=client, seed=3, max_iter=8, tol=1e-12, mean_tol=1e-12)
    reference = one_process(model, "models/gmm.csv", 3, 8, accelerate=None)
    assert len(post.trace) == len(reference.trace) == 8
    np.testing.assert_allclose(post.trace, reference.trace, rtol=1e-10, atol=0)
    assert any(a == b for a, b in zip(post.trace, post.trace[1:]))  # a rejected step repeats the plain point


def test_a_partition_rebuilt_since_the_refit_fits_its_locals_to_the_plain_globals(monkeypatch):
    """A worker lost between a step's refit and its rejection: the partition rebuilt in the sweep
    kept no locals to put back, so `restore_task` fits them to the globals it is given."""
    model = ppl.load("models/gmm.vim")
    dataset = model.bind("models/gmm.csv")
    schedule = build_problem(model.checked, dataset, model.analyze(dataset)).schedule
    part = worker.Partition(0, dataset, model.checked, model.analyze(dataset), schedule, None)
    held, fitted = worker._bind(part, dataset, 0), worker._bind(part, dataset, 0)
    monkeypatch.setattr(worker, "_held", lambda *args: held)
    monkeypatch.setattr(worker, "get_worker", lambda: SimpleNamespace(address="here"))
    worker.restore_task(part, "run", 1, 0, {})
    batch_e_step(fitted.problem, fitted.state)
    np.testing.assert_array_equal(held.state.natural["z"], fitted.state.natural["z"])


def test_a_cluster_run_notes_no_under_coverage_from_its_clients_few_groups(client, tmp_path):
    """The client binds a sample of the groups: the under-coverage check would measure the
    likelihood's curvature on those rows only. One process notes it; the cluster takes the same
    sweeps and notes nothing."""
    rng = np.random.default_rng(0)
    x = np.linspace(-2.0, 2.0, 240)
    frame = pd.DataFrame({"x": x, "y": 1.0 + 0.5 * x + 0.3 * rng.normal(size=len(x))})
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 2)):
        frame.iloc[rows].to_csv(tmp_path / f"part{i}.csv", index=False)
    model = ppl.compile("data x: real[N]\ndata y: real[N]\nb0 ~ Normal(0, 1)\nb ~ Normal(0, 1)\n"
                        "y ~ Normal(b0 + b * (x + 20), 4.0)\n")
    post = model.infer(str(tmp_path / "part*.csv"), client=client, seed=0)
    reference = model.infer(frame, seed=0)
    assert post.converged and post.iterations == reference.iterations
    assert reference.coverage and not post.coverage


def test_anderson_is_refused_on_a_cluster(client, files):
    with pytest.raises(OptionError, match="Anderson") as error:
        ppl.load("models/gmm.vim").infer(files["gmm"], client=client, accelerate="anderson")
    assert error.value.code == "E369"


def test_a_dask_dataframe_and_globals_in_two_rounds_give_the_one_process_trace(client, small_start):
    """Without `@joint`, mu's and Lambda's data messages read each other: two rounds a sweep."""
    import dask.dataframe as dd
    model = ppl.compile(open("models/gmm.vim").read().replace("@joint", ""))
    frame = dd.from_pandas(pd.read_csv("models/gmm.csv"), npartitions=3)  # 91, 91 and 90 rows
    post = model.infer(frame, client=client, seed=3, max_iter=6, tol=1e-12, mean_tol=1e-12)
    reference = one_process(model, "models/gmm.csv", 3, 6, accelerate=None)  # SQUAREM, as the cluster by default
    assert len(post.trace) == len(reference.trace) == 6
    np.testing.assert_allclose(post.trace, reference.trace, rtol=1e-10, atol=0)
    dataset = model.bind("models/gmm.csv")
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    plan = plan_for(problem.model, problem.scopes, problem.latent)
    assert len(batch.waves(problem, plan, data_factors(problem, plan))) == 2


def test_svi_on_the_cluster_takes_the_same_steps(client, files):
    model = ppl.load("models/gmm.vim")
    schedule = "svi(batch=40, passes=3)"
    alone = model.infer("models/gmm.csv", seed=1, schedule=schedule)
    spread = model.infer(files["gmm"], client=client, seed=1, schedule=schedule)
    assert len(spread.trace) == len(alone.trace) > 10
    np.testing.assert_allclose(spread.trace, alone.trace, rtol=1e-10)
    for name in ("pi", "mu", "Lambda"):
        np.testing.assert_allclose(spread[name].mean, alone[name].mean, rtol=1e-9, atol=1e-12)
    assert spread.elbo == pytest.approx(alone.elbo, rel=1e-10)


def test_a_killed_worker_is_replaced_and_the_run_reaches_the_same_bound(client, files, small_start):
    model = ppl.load("models/gmm.vim")
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]

    def kill(sweep, elbo):
        if sweep == 2:
            os.kill(pids[victim], signal.SIGKILL)
    disturbed = model.infer(files["gmm"], client=client, seed=5, tol=1e-10, progress=kill)
    client.wait_for_workers(2, timeout=60)
    workers = set(client.scheduler_info(n_workers=-1)["workers"])
    assert victim not in workers and len(workers) == 2  # lost, and replaced by the nanny
    assert "rebuilt from the data and the globals after a lost worker" in disturbed.notes[-1]
    undisturbed = one_process(model, "models/gmm.csv", 5, 500, tol=1e-10)  # the same start, in this process
    assert disturbed.converged and disturbed.elbo == pytest.approx(undisturbed.elbo, rel=1e-8, abs=0)


def test_an_interrupted_run_keeps_the_last_sweeps_globals(client, files, small_start):
    def stop(sweep, elbo):
        if sweep == 3:
            raise KeyboardInterrupt
    post = ppl.load("models/gmm.vim").infer(files["gmm"], client=client, seed=3, progress=stop)
    assert post.interrupted and post.iterations == 3 and len(post.trace) == 3
    assert np.isfinite(post["pi"].mean).all() and "z" not in post


def test_the_command_line_runs_on_a_scheduler(client, files, small_start, tmp_path):
    out = tmp_path / "post.json"
    code = main(["infer", "models/gmm.vim", files["gmm"], "--dask", client.scheduler.address, "--max-iter", "3",
                 "--seed", "0", "--output", str(out), "--quiet"])
    assert code == 0 and "pi" in ppl.Posterior.load(out)


# ---- partitioned data: bind's checks, and a group never split

def test_a_group_split_across_files_names_the_column_to_sort_by(client, tmp_path):
    lda = pd.read_csv("models/lda.csv")
    lda.iloc[:100].to_csv(tmp_path / "a.csv", index=False)
    lda.iloc[50:].to_csv(tmp_path / "b.csv", index=False)  # document 1's rows in both
    with pytest.raises(DataError) as info:
        ppl.load("models/lda.vim").infer(str(tmp_path / "*.csv"), client=client)
    assert info.value.code == "E360" and info.value.column == "doc" and "sort the rows by `doc`" in info.value.hint


def test_a_bad_cell_of_a_dataframe_partition_is_at_its_row_in_the_frame(client):
    import dask.dataframe as dd
    frame = pd.read_csv("models/gmm.csv").astype({"waiting": object})
    frame.loc[200, "waiting"] = "oops"
    with pytest.raises(DataError) as info:
        ppl.load("models/gmm.vim").infer(dd.from_pandas(frame, npartitions=4), client=client)
    assert (info.value.code, info.value.column, info.value.row) == ("E406", "waiting", 201)


@pytest.mark.parametrize("text, first, second, code, row", [
    # a level out of range, at its row in the second file; then column groups of two widths
    ("data c: cat(3)[N]\ndata y: real[N]\nm ~ Normal(0, 1)\nfor n in 1..N { y[n] ~ Normal(m, 1) }\n",
     "c,y\n1,0.5\n2,0.1\n", "c,y\n3,0.2\n7,0.3\n", "E409", 2),
    ("data x: real[N, D]\nm ~ Normal(0, 1)\nfor n in 1..N { for d in 1..D { x[n, d] ~ Normal(m, 1) } }\n",
     "x1,x2\n1,2\n", "x1,x2,x3\n1,2,3\n", "E362", None),
])
def test_errors_found_across_files_name_the_file(client, tmp_path, text, first, second, code, row):
    (tmp_path / "a.csv").write_text(first)
    (tmp_path / "b.csv").write_text(second)
    with pytest.raises(DataError) as info:
        ppl.compile(text).infer(str(tmp_path / "*.csv"), client=client)
    assert (info.value.code, info.value.row) == (code, row) and info.value.source_name.endswith("b.csv")


@pytest.mark.parametrize("block, code, member", [("all", "E634", "`tau_a`"), ("mu_a,mu_b,a,b", "E635", "`a`")])
def test_a_block_a_cluster_cannot_run_is_refused(client, tmp_path, block, code, member):
    """A Gamma member's searched step needs the whole ELBO (E634); group effects in a block's arrow
    span every group, which the partitions split (E635: it was a ValueError, 'cannot reshape')."""
    frame = pd.read_csv("models/hierarchical_logistic.csv")
    for i, sites in enumerate(np.array_split(np.sort(frame.site.unique()), 2)):
        frame[frame.site.isin(sites)].to_csv(tmp_path / f"part{i}.csv", index=False)
    model = ppl.load("models/hierarchical_logistic.vim")
    with pytest.raises(ppl.ModelError) as info:
        model.infer(str(tmp_path / "*.csv"), client=client, gaussian_block=block)
    assert info.value.code == code and member in str(info.value) and info.value.span is not None


@pytest.mark.parametrize("block", ["\nblock (b0, b)\n", ""])
def test_a_model_with_no_locals_runs_on_a_cluster_as_in_one_process(client, tmp_path, block):
    """A logistic regression on x + 20 over two partitions starts where one process starts (the
    sample's undamped fit stopped at an ELBO of -1.5e7) and takes its SQUAREM steps: the same
    trace as `infer` on the rows in one process. Under `block (b0, b)` (its moments are solved
    blocks: the start was an AttributeError, no 'copy') the posterior keeps the joint q."""
    frame = pd.read_csv("models/hierarchical_logistic.csv")
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 2)):
        frame.iloc[rows].to_csv(tmp_path / f"part{i}.csv", index=False)
    model = ppl.compile("data x: real[N]\ndata y: bool[N]\nb0 ~ Normal(0, 1)\nb ~ Normal(0, 1)\n"
                        "y ~ Bernoulli(logistic(b0 + b * (x + 20)))" + block)
    post = model.infer(str(tmp_path / "part*.csv"), client=client, seed=3, max_iter=12)
    reference = model.infer(frame, seed=3, max_iter=12)
    assert len(post.trace) == len(reference.trace) == 12
    np.testing.assert_allclose(post.trace, reference.trace, rtol=1e-10, atol=0)
    assert [b.members for b in post.blocks] == ([("b0", "b")] if block else [])


@pytest.mark.parametrize("data, options, code", [
    ("nothing/*.csv", {"client": True}, "E361"),
    ("nothing/*.csv", {}, "E361"),  # no file: said before that a cluster would read them
    ("docs", {}, "E361"),  # a folder with no .parquet file
    ("models/*.csv", {}, "E363"),
    ("models/gmm.csv", {"client": True, "stream": True, "schedule": "svi(batch=10)"}, "E364"),
    ("frame", {"client": True}, "E365"),
])
def test_cluster_options_are_checked(client, data, options, code):
    options = {k: (client if k == "client" else v) for k, v in options.items()}
    data = pd.read_csv("models/gmm.csv") if data == "frame" else data
    with pytest.raises((DataError, OptionError)) as info:
        ppl.load("models/gmm.vim").infer(data, **options)
    assert info.value.code == code


@pytest.mark.parametrize("flags, code", [(["--workers", "0"], "E366"), (["--workers", "2", "--dask", "x:1"], "E366"),
                                         (["--dask", "tcp://127.0.0.1:9"], "E367")])
def test_cluster_flags_are_checked(flags, code, capsys, monkeypatch):
    monkeypatch.setattr("ppl.cluster.connect.CONNECT_TIMEOUT", "0.5s")
    assert main(["infer", "models/gmm.vim", "models/gmm.csv", *flags]) == 1
    assert f"[{code}]" in capsys.readouterr().err


def test_without_dask_the_cluster_flags_say_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)
    assert main(["infer", "models/gmm.vim", "models/gmm.csv", "--workers", "2"]) == 1
    assert '[E368]' in capsys.readouterr().err


def test_a_run_in_one_process_imports_nothing_of_dask():
    code = ("import sys, ppl; ppl.load('models/gmm.vim').infer('models/gmm.csv', max_iter=2); "
            "from ppl.cli import main; main(['check', 'models/lda.vim']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert found.strip().splitlines()[-1] == "[]"
