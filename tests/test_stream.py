"""Streaming groups (ppl.data.stream): one pass over a file in chunks, then the rows of any set of
groups. `take` must give exactly what `bind` gives for the rows of those groups (with the full
data's levels), whatever the chunking, the file format and the order of rows in the file."""

import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ppl
from ppl.data.stream import GroupedSource
from test_binding import assert_same_dataset

MODELS = Path(__file__).parents[1] / "models"
LDA = ppl.load(MODELS / "lda.vim")
GMM = ppl.load(MODELS / "gmm.vim")


def labels_of(dataset, name):
    return np.array(dataset.levels[name], dtype=object)[dataset.arrays[name]]


@pytest.mark.parametrize("chunk_rows", [500, 5000, 100_000])
def test_all_groups_in_order_is_bind_of_the_whole_file(chunk_rows):
    with GroupedSource.open(LDA, MODELS / "lda.csv", "doc", chunk_rows=chunk_rows) as source:
        whole = LDA.bind(MODELS / "lda.csv")
        assert (source.groups, source.group_dim, source.rows) == (100, "D", 12160)
        assert source.sizes == whole.sizes and source.levels == whole.levels
        assert source.group_sizes.tolist() == np.bincount(whole.arrays["doc"]).tolist()
        assert_same_dataset(source.take(np.arange(100)), whole)


def test_a_subset_is_bind_of_its_rows_with_the_levels_kept(tmp_path):
    frame = pd.read_csv(MODELS / "lda.csv")
    chosen = np.array([41, 7, 93])
    rows = pd.concat([frame[frame["doc"] == d + 1] for d in chosen])
    rows.to_csv(tmp_path / "subset.csv", index=False)
    alone = LDA.bind(tmp_path / "subset.csv")
    whole = LDA.bind(MODELS / "lda.csv")
    for source in (GroupedSource.open(LDA, MODELS / "lda.csv", "doc", chunk_rows=1000),
                   GroupedSource.from_dataset(LDA, whole, "doc")):
        batch = source.take(chosen)
        assert batch.sizes == {"K": 10, "N": len(rows), "D": 3, "V": 500}
        assert batch.levels["doc"] == ["42", "8", "94"] and batch.levels["word"] == whole.levels["word"]
        assert batch.arrays["doc"].tolist() == np.repeat([0, 1, 2], [np.sum(rows["doc"] == d + 1) for d in chosen]).tolist()
        np.testing.assert_array_equal(labels_of(batch, "word"), labels_of(alone, "word"))
        np.testing.assert_array_equal(labels_of(batch, "doc"), rows["doc"].astype(str).to_numpy())
        source.close()


def test_groups_scattered_through_the_file_are_gathered(tmp_path):
    frame = pd.read_csv(MODELS / "lda.csv")
    shuffled = frame.sample(frac=1.0, random_state=0)
    shuffled.to_csv(tmp_path / "shuffled.csv", index=False)
    shuffled.to_parquet(tmp_path / "shuffled.parquet", row_group_size=1000)
    in_group_order = shuffled.sort_values("doc", kind="stable")
    in_group_order.to_csv(tmp_path / "sorted.csv", index=False)
    expected = LDA.bind(tmp_path / "sorted.csv")
    for path in ("shuffled.csv", "shuffled.parquet"):
        with GroupedSource.open(LDA, tmp_path / path, "doc", chunk_rows=700) as source:
            assert_same_dataset(source.take(np.arange(100)), expected)


def test_one_group_per_row(tmp_path):
    whole = GMM.bind(MODELS / "gmm.csv")
    chosen = np.array([9, 3, 4])
    for source in (GroupedSource.open(GMM, MODELS / "gmm.csv", None, chunk_rows=16),
                   GroupedSource.from_dataset(GMM, whole, None)):
        assert source.groups == source.rows == whole.sizes["N"] and source.group_dim == "N"
        batch = source.take(chosen)
        assert batch.sizes == {**whole.sizes, "N": 3}
        np.testing.assert_array_equal(batch.arrays["x"], whole.arrays["x"][chosen])
        source.close()


def test_missing_cells_and_blank_lines_across_chunks(tmp_path):
    model = ppl.compile("data x: real[N]\ndata y: real[N]\nw ~ Normal(0, 1)\nfor n in 1..N { y[n] ~ Normal(w * x[n], 1) }")
    text = "x,y\n" + "".join(f"{i},{'NA' if i % 7 == 0 else i}\n" for i in range(1, 40)) + "\n\n"
    (tmp_path / "d.csv").write_text(text)
    whole = model.bind(tmp_path / "d.csv")
    with GroupedSource.open(model, tmp_path / "d.csv", None, chunk_rows=5) as source:
        assert_same_dataset(source.take(np.arange(39)), whole)
    (tmp_path / "e.csv").write_text(text.replace("20,20\n", "\n"))  # a blank row inside: x missing
    with pytest.raises(ppl.DataError) as caught:
        GroupedSource.open(model, tmp_path / "e.csv", None, chunk_rows=5)
    assert (caught.value.code, caught.value.column, caught.value.row) == ("E410", "x", 20)


@pytest.mark.parametrize("cell, code", [("tall", "E406"), ("-3", "E420"), ("2.5", "E407")])
def test_errors_keep_their_row_in_the_file(tmp_path, cell, code):
    model = ppl.compile("data y: int[N]\nlam ~ Gamma(1, 1)\nfor n in 1..N { y[n] ~ Poisson(lam) }")
    lines = ["y"] + ["1"] * 3000
    lines[2345] = cell
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ppl.DataError) as caught:
        GroupedSource.open(model, tmp_path / "d.csv", None, chunk_rows=200)
    assert (caught.value.code, caught.value.column, caught.value.row) == (code, "y", 2345)
    expected = pytest.raises(ppl.DataError, model.bind, tmp_path / "d.csv").value
    assert (expected.code, expected.message, expected.row) == (code, caught.value.message, 2345)


def test_the_pass_over_groups_holds_blocks_not_the_file(tmp_path, monkeypatch):
    rows = 200_000
    rng = np.random.default_rng(2)
    words = np.char.add("w", rng.integers(0, 300, rows).astype(str))
    pd.DataFrame({"doc": np.arange(rows) // 1000 + 1, "word": words}).sample(frac=1.0, random_state=3) \
        .to_csv(tmp_path / "d.csv", index=False)
    monkeypatch.setattr("ppl.data.stream.BLOCK_ROWS", 10_000)
    tracemalloc.start()
    source = GroupedSource.open(LDA, tmp_path / "d.csv", "doc", chunk_rows=5000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < rows * 2 * 4 / 2, peak  # the two int32 code columns would be 1.6 MB
    assert source.groups == 200 and source.group_sizes.tolist() == [1000] * 200
    assert (source.take(np.array([199])).arrays["doc"] == 0).all()
    source.close()


def test_the_pass_holds_a_chunk_not_the_file(tmp_path):
    rows = 200_000
    rng = np.random.default_rng(1)
    pd.DataFrame({"x": rng.normal(size=rows), "y": rng.normal(size=rows)}).to_csv(tmp_path / "d.csv", index=False)
    model = ppl.compile("data x: real[N]\ndata y: real[N]\nw ~ Normal(0, 1)\nfor n in 1..N { y[n] ~ Normal(w * x[n], 1) }")
    tracemalloc.start()
    source = GroupedSource.open(model, tmp_path / "d.csv", None, chunk_rows=5000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    data_bytes = rows * 2 * 8
    assert peak < data_bytes / 8, peak  # numpy memory in the pass: a few chunks of 5,000 rows
    batch = source.take(np.arange(0, rows, 1000))
    assert batch.arrays["x"].shape == (200,) and source.rows == rows
    source.close()


@pytest.mark.parametrize("bad, message", [
    ("1,2,3", "malformed CSV: line 2502 has 3 fields but the header names 2"),
    ("1,\xff", "malformed CSV: line 2502 is not UTF-8 text (byte 0xff)"),
])
def test_a_malformed_line_is_located_in_a_streamed_file(tmp_path, bad, message):
    model = ppl.compile("data x: real[N]\ndata y: real[N]\nw ~ Normal(0, 1)\nfor n in 1..N { y[n] ~ Normal(w * x[n], 1) }")
    lines = ["x,y"] + ["1,2"] * 3000
    lines[2501] = bad
    (tmp_path / "d.csv").write_bytes("\n".join(lines).encode("utf-8" if "\xff" not in bad else "latin-1") + b"\n")
    with pytest.raises(ppl.DataError) as caught:
        GroupedSource.open(model, tmp_path / "d.csv", None, chunk_rows=200)
    assert caught.value.code == "E402" and caught.value.message == message


def test_category_errors_keep_their_row(tmp_path):
    model = ppl.compile("const K = 3\ndata c: cat(K)[N]\nphi ~ Dirichlet(ones(K))\nfor n in 1..N { c[n] ~ Categorical(phi) }")
    lines = ["c"] + ["1", "2", "3"] * 1000
    lines[1777] = "7"
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ppl.DataError) as caught:
        GroupedSource.open(model, tmp_path / "d.csv", None, chunk_rows=100)
    expected = pytest.raises(ppl.DataError, model.bind, tmp_path / "d.csv").value
    assert (caught.value.code, caught.value.message, caught.value.row) == (expected.code, expected.message, 1777)


def test_the_group_must_be_a_categorical_data_name():
    for group in ("word_count", "theta"):
        with pytest.raises(ValueError, match="one-dimensional `cat` data name"):
            GroupedSource.open(LDA, MODELS / "lda.csv", group)


def test_data_off_the_row_plate_are_kept_whole():
    model = ppl.compile("data g: cat(G)[N]\ndata y: real[N]\ndata w: real[K]\n"
                        "mu ~ Normal(0, 1)\nfor n in 1..N { y[n] ~ Normal(mu, 1) }")
    dataset = model.bind({"g": np.array([2, 1, 2]), "y": np.array([0.5, 1.5, 2.5]), "w": np.arange(4.0)})
    batch = GroupedSource.from_dataset(model, dataset, "g").take(np.array([1]))
    assert batch.arrays["y"].tolist() == [0.5, 2.5] and batch.arrays["w"].tolist() == [0, 1, 2, 3]
    assert batch.sizes == {"N": 2, "G": 1, "K": 4} and batch.levels["g"] == ["2"]
