"""`ppl infer --vars` with `--output`: a pattern that names a variable of the model which the
posterior does not hold (a local of a streamed or cluster run, which keeps the globals only; data
without an empty cell) cost the whole run's output: E340 came after the fit, before anything was
written. The output is written, and the report says why the variable is not listed."""

from __future__ import annotations

import json

from ppl.cli import main


def test_a_streamed_run_asked_for_a_local_writes_its_output_and_says_why(tmp_path, capsys):
    out = tmp_path / "lda.json"
    code = main(["infer", "models/lda.vim", "models/lda.csv", "--schedule", "svi(batch=20)", "--stream", "--seed", "0",
                 "--max-iter", "1", "--vars", "z,beta", "--output", str(out)])
    report = capsys.readouterr().out
    assert code == 0 and out.is_file()
    document = json.loads(out.read_text())  # a loadable posterior: every variable, and the patterns recorded
    assert "beta" in document["variables"] and document["run"]["options"]["vars"] == "z,beta"
    # the options that made the run, so that it can be made again (the schedule and --stream were missing)
    assert {k: document["run"]["options"][k] for k in ("schedule", "stream", "max_iter")} == {
        "schedule": "svi(batch=20)", "stream": True, "max_iter": 1}
    assert ("note: --vars z: `z` is not in this posterior: a streamed or cluster run keeps the global variables "
            "only") in report.splitlines()
    assert any(line.startswith("beta[1,") for line in report.splitlines())


def test_data_without_empty_cells_asked_for_is_a_note_after_the_summary_is_written(tmp_path, capsys):
    out = tmp_path / "summary.csv"
    code = main(["infer", "models/linear_regression.vim", "models/linear_regression.csv", "--seed", "0", "--vars", "y",
                 "--output", str(out)])
    report = capsys.readouterr().out.splitlines()
    assert code == 0 and out.is_file()
    assert "note: --vars y: `y` is not in this posterior: data without an empty cell have no q" in report
    assert any(line.startswith("w[1]") for line in report)  # nothing asked for is listed: the default table


def test_a_discrete_chain_is_counted_by_its_rows_and_has_no_sd_in_the_json(tmp_path, capsys):
    """The HMM's 272 hidden states were '544 local CategoricalChain' (rows × states: the count took the
    probabilities axis for a plate), while the mixture's 272 `z` are '272 local Categorical'; and its JSON
    entry gave an sd √(p(1 − p)) where a Categorical's is null."""
    out = tmp_path / "hmm.json"
    assert main(["infer", "models/hmm.vim", "models/hmm.csv", "--seed", "0", "--output", str(out)]) == 0
    assert "z: 272 local CategoricalChain, not listed; --vars z to show" in capsys.readouterr().out.splitlines()
    document = json.loads(out.read_text())
    assert document["omitted"] == ["z: 272 local CategoricalChain, not listed; --vars z to show"]
    assert document["variables"]["z"]["shape"] == [272, 2] and document["variables"]["z"]["sd"] is None
