"""Reading data by columns: the pyarrow reader and the exact `csv` reader give the same dataset
or the same located error; Parquet and DataFrames bind as their CSV; missing-value tokens; the
data errors of issue 14 (duplicate header, int64 overflow, level counts, unreadable file)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ppl
from ppl import cli
from ppl.data import reading
from test_binding import CSV, MODEL, assert_same_dataset, csv_file

ROOT = Path(__file__).parents[1]
ERRORS = ROOT / "tests" / "errors" / "data"
RESPONSE = ppl.compile("data x: real[N]\ndata y: real[N]\nw ~ Normal(0, 1)\nfor n in 1..N { y[n] ~ Normal(w * x[n], 1) }")
AB = ppl.compile("data a: real[N]\ndata b: real[N]\nw ~ Normal(0, 1)\nfor n in 1..N { b[n] ~ Normal(w * a[n], 1) }")
CATS = ppl.compile("data c: cat(K)[N]\nphi ~ Dirichlet(ones(K))\nfor n in 1..N { c[n] ~ Categorical(phi) }")


def outcome(model, data, **options):
    """The dataset, or (code, message, column, row) of the error."""
    try:
        return model.bind(data, **options)
    except ppl.DataError as error:
        return error.code, error.message, error.column, error.row


def both_readers(monkeypatch, model, path, **options):
    exact = outcome(model, path, **options)
    monkeypatch.setattr(reading, "SMALL_CSV", 0)  # every file through pyarrow
    arrow = outcome(model, path, **options)
    monkeypatch.undo()
    return exact, arrow


def assert_same(exact, arrow):
    if isinstance(exact, tuple):
        assert exact == arrow
    else:
        assert_same_dataset(exact, arrow)
        assert exact.notes == arrow.notes


TEXTS = [CSV, "a,b\n1,2\n3,4\n5,6,7\n", "a,b\n1,2\n\n3\n", 'a,b\n"1\n2",3\n4,5,6\n', "x,y\n",
         "x,y\n1,2\n\n3,\n\n\n,\n", CSV.replace("0.5", '"1_000"'), CSV.replace("0.5", "inf"),
         CSV.replace("FALSE", "yes"), CSV.replace("north", " north"), "x,k,b,g,y\n 1, 2, 1, a, NA\n",
         CSV.replace("0.5", "+.5"), "\n\nx,k,b,g,y\n1,2,true,a,3\n"]


@pytest.mark.parametrize("text", TEXTS)
def test_pyarrow_and_the_csv_module_agree(tmp_path, monkeypatch, text):
    model = {"a,b\n": AB, "x,y\n": RESPONSE}.get(text[:4], MODEL)
    assert_same(*both_readers(monkeypatch, model, csv_file(tmp_path, text)))


@pytest.mark.parametrize("case", sorted(p.stem for p in ERRORS.glob("*.csv")  # the cases that fail in the data
                                         if "# code: E4" in p.with_suffix(".vim").read_text(encoding="utf-8")))
def test_the_error_catalogue_through_pyarrow(monkeypatch, case):
    model = ppl.load(ERRORS / f"{case}.vim")
    exact, arrow = both_readers(monkeypatch, model, ERRORS / f"{case}.csv")
    assert isinstance(exact, tuple)
    assert_same(exact, arrow)


def test_bytes_that_are_not_utf8_through_pyarrow(tmp_path, monkeypatch):
    path = tmp_path / "data.csv"
    path.write_bytes(b"x,y\n1,2\n3,\xff\n")
    exact, arrow = both_readers(monkeypatch, RESPONSE, path)
    assert exact == arrow == ("E402", "malformed CSV: line 3 is not UTF-8 text (byte 0xff)", None, None)


@pytest.mark.parametrize("token", ["", "NA", "nan", "NaN", "N/A", "NULL", "null", "None", "#N/A", " NA"])
def test_missing_tokens_are_missing_cells(tmp_path, monkeypatch, token):
    path = csv_file(tmp_path, f"x,y\n1,2\n2,{token}\n3,4\n")
    for dataset in both_readers(monkeypatch, RESPONSE, path):
        assert dataset.masks["y"].tolist() == [True, False, True]
        assert dataset.arrays["y"].tolist() == [2.0, 0.0, 4.0]
    exact, arrow = both_readers(monkeypatch, RESPONSE, csv_file(tmp_path, f"x,y\n1,2\n{token},3\n"))
    assert exact == arrow == ("E410", "`x` has an empty cell; only variables drawn with `~` may have "
                              "missing values", "x", 2)


def test_more_missing_tokens_by_option(tmp_path, monkeypatch, capsys):
    path = csv_file(tmp_path, "x,y\n1,2\n2,-999\n3,?\n")
    for dataset in both_readers(monkeypatch, RESPONSE, path, na=["-999", "?"]):
        assert dataset.masks["y"].tolist() == [True, False, False]
    assert RESPONSE.bind(path, na=["?"]).masks["y"].tolist() == [True, True, False]
    model = tmp_path / "m.vim"
    model.write_text(RESPONSE.text)
    assert cli.main(["infer", str(model), str(path), "--na", "-999", "--na", "?", "--quiet"]) == 0
    assert cli.main(["check", str(model), str(path), "--na", "-999"]) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"{path}, column 'y', row 3: data error [E406]: `?` is not a number")


@pytest.mark.parametrize("na", ["-999", ["-999"], -999, [-999.0]])
def test_a_missing_token_marks_numeric_cells_of_a_dataframe_dict_or_parquet(na, tmp_path):
    """`na` named cell texts, so a DataFrame's, a dict's or a Parquet file's float column ignored
    it and -999 was fitted as data, silently; a scalar token that is not text was a TypeError."""
    x, y = np.array([1.0, 2.0, 3.0]), np.array([2.0, -999.0, 4.0])
    pd.DataFrame({"x": x, "y": y}).to_parquet(tmp_path / "data.parquet")
    for data in (pd.DataFrame({"x": x, "y": y}), {"x": x, "y": y}, pd.DataFrame({"x": x, "y": y.astype(int)}),
                 tmp_path / "data.parquet"):
        dataset = RESPONSE.bind(data, na=na)
        assert dataset.masks["y"].tolist() == [True, False, True]
        assert dataset.arrays["y"].tolist() == [2.0, 0.0, 4.0]


def test_a_numeric_missing_token_matches_a_csv_number_by_value(tmp_path, monkeypatch):
    """`--na -999` matched the text `-999` only: a CSV cell `-999.0` or `-9.99e2` was fitted as
    data, silently. A numeric column's cells match a token that reads as a number by value, in
    both readers and in a streamed pass; a text column still matches texts."""
    from ppl.data.stream import GroupedSource
    path = csv_file(tmp_path, "x,y\n1,2\n2,-999.0\n3,-9.99e2\n4,-999\n5,4\n")
    for dataset in both_readers(monkeypatch, RESPONSE, path, na="-999"):
        assert dataset.masks["y"].tolist() == [True, False, False, False, True]
    streamed = GroupedSource.open(RESPONSE, path, None, na=["-999"])
    assert streamed.take(np.arange(5)).masks["y"].tolist() == [True, False, False, False, True]
    codes = csv_file(tmp_path, "c\na\n-999.0\n-999\nb\n")
    assert CATS.bind(codes, na="-999").levels["c"] == ["-999.0", "a", "b"]


def test_dataframe_and_parquet_bind_as_their_csv(tmp_path):
    path = csv_file(tmp_path, "x,k,b,g,y\n0.5,1,true,north,1.0\n-10,2,0,south,NA\n2,3,FALSE,north,2.5\n")
    from_csv = MODEL.bind(path)
    frame = pd.read_csv(path)
    assert_same_dataset(from_csv, MODEL.bind(frame))
    frame.to_parquet(tmp_path / "data.parquet")
    assert_same_dataset(from_csv, MODEL.bind(tmp_path / "data.parquet"))


def test_a_parquet_category_column_binds_as_its_csv(tmp_path):
    """pandas writes a `category` column as an Arrow dictionary with int8 indices (int16 past
    127 levels): its codes are read at their own width, not as int32 (which read four codes as
    one and indexed out of bounds)."""
    path = csv_file(tmp_path, "x,k,b,g,y\n0.5,1,true,north,1.0\n-10,2,0,south,NA\n2,3,FALSE,west,2.5\n4,5,1,north,3\n")
    from_csv = MODEL.bind(path)
    frame = pd.read_csv(path).astype({"g": "category"})
    frame.to_parquet(tmp_path / "data.parquet")
    assert_same_dataset(from_csv, MODEL.bind(tmp_path / "data.parquet"))


def cli_error(tmp_path, capsys, model_text: str, csv_text: str, *args) -> str:
    """The first line of stderr of `ppl check`, after asserting exit code 1 and no traceback."""
    model = tmp_path / "m.vim"
    model.write_text(model_text)
    data = csv_file(tmp_path, csv_text)
    assert cli.main(["check", str(model), str(data), *args]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.splitlines()[0].replace(str(data), "data.csv")


POISSON = "data y: int[N]\nlam ~ Gamma(1, 1)\nfor n in 1..N { y[n] ~ Poisson(lam) }"


def test_a_count_beyond_int64_is_located(tmp_path, capsys):
    first = cli_error(tmp_path, capsys, POISSON, "y\n1\n1e300\n")
    assert first == ("data.csv, column 'y', row 2: data error [E414]: `1e+300` is too large for an integer "
                     "(at most 2^63 - 1 in magnitude)")
    error = outcome(ppl.compile(POISSON), {"y": np.array([1.0, 1e300])})
    assert error[0] == "E414" and error[2:] == ("y", 2)


def test_a_duplicate_header_is_located(tmp_path, capsys):
    first = cli_error(tmp_path, capsys, POISSON, "y,x,y\n1,2,3\n")
    assert first.startswith("data.csv, column 'y': data error [E412]: the header names column `y` more than once")


def test_unused_columns_are_noted_by_check_and_infer(tmp_path, capsys):
    model = tmp_path / "m.vim"
    model.write_text(POISSON)
    data = csv_file(tmp_path, "id,y,comment\n1,3,a\n2,4,b\n")
    assert ppl.compile(POISSON).bind(data).notes == ("columns not used by the model: id, comment",)
    for command in (["check"], ["infer", "--max-iter", "5"]):
        assert cli.main([*command, str(model), str(data)]) == 0
        assert "note: columns not used by the model: id, comment" in capsys.readouterr().out


@pytest.mark.parametrize("cell, shown", [("100000000", "100000000"), ("1e308", "1e308")])
def test_a_huge_category_code_is_located_before_allocation(tmp_path, capsys, cell, shown):
    text = CATS.text.replace("cat(K)", "cat(V)").replace("ones(K)", "ones(V)")
    first = cli_error(tmp_path, capsys, text, f"c\n1\n2\n{cell}\n")
    assert first.startswith(f"data.csv, column 'c', row 3: data error [E415]: `c` would have "
                            f"{int(float(cell))} levels (codes up to")


def test_a_huge_declared_level_count_is_an_error(tmp_path, capsys):
    first = cli_error(tmp_path, capsys, "const K = 1000000000\n" + CATS.text, "c\n1\n2\n")
    assert first == ("data.csv, column 'c': data error [E415]: `c` would have 1000000000 levels "
                     "(1000000000 levels declared) but the data hold 2 distinct categories")


def test_100000_labels_stay_codes(tmp_path):
    labels = np.array([f"w{i:06d}" for i in range(100_000)])
    rng = np.random.default_rng(0)
    column = np.concatenate([labels, rng.choice(labels, 50_000)])
    path = tmp_path / "words.csv"
    pd.DataFrame({"c": column}).to_csv(path, index=False)
    text = CATS.text.replace("cat(K)", "cat(V)").replace("ones(K)", "ones(V)")
    dataset = ppl.compile(text).bind(path)
    assert dataset.sizes["V"] == 100_000 and dataset.levels["c"] == sorted(labels.tolist())
    assert dataset.arrays["c"].dtype == np.int32 and dataset.arrays["c"].shape == (150_000,)
    np.testing.assert_array_equal(np.array(dataset.levels["c"])[dataset.arrays["c"]], column)


def test_an_unreadable_file_is_located(tmp_path, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(reading, "open", refuse, raising=False)
    first = cli_error(tmp_path, capsys, POISSON, "y\n1\n")
    assert first == "data.csv: data error [E413]: cannot read the data file: Permission denied"


def test_a_small_file_is_read_without_pyarrow():
    """Start-up: pyarrow (0.1 s of import) is loaded only for files over `SMALL_CSV` bytes."""
    import subprocess
    import sys
    code = ("import sys\nfrom ppl import cli\n"
            "cli.main(['check', 'models/lda.vim', 'models/lda.csv'])\n"
            "print(sorted(m for m in sys.modules if m.startswith(('pyarrow', 'pandas'))), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stderr.strip() == "[]"


ODD_TEXTS = ["x,y\r\n1,2\r\n3,4\r\n", "\ufeffx,y\n1,2\n", 'x,y\n"1,5",2\n"a\nb", ""\n', "x, y\n 1,  2\n",
             "x,x,\n1,2,3\n", "x,y\n", "x,y\n1,2", "x\n1\n\n2\n", "x\n1\n2\n\n\n", "x,y\n,\n1,2\n,\n",
             "x,y,z\n1,2,3\n,\n", "x,y\n1,2\n3\n", "\n\nx,y\n1,2\n", ",\nx,y\n1,2\n", "", "\n\n", "x\n\n",
             'x,y\n"1,2\n', "x,y\n1,\x002\n", 'x\n""\n1\n']


@pytest.mark.parametrize("text", ODD_TEXTS)
def test_the_whole_file_path_gives_the_record_path_table(monkeypatch, text):
    """A CSV parsed whole (`_regular`) gives the Table, or the error, of the record-by-record read."""
    from ppl.data import table

    def read():
        try:
            return {k: v.tolist() for k, v in table.read_csv_text(text.encode(), "t.csv").columns.items()}
        except ppl.DataError as error:
            return error.code, error.message, error.row

    fast = read()
    monkeypatch.setattr(table, "_regular", lambda text: (None, []))
    assert fast == read()


@pytest.mark.parametrize("text, code", [(b"", "E401"), (b"y\n1\n\xe9\n", "E402"), (b"y,z\n1,2\n3,4,5\n", "E402"),
                                        (b"y,z\n1,2\n3\n", "E402")])
@pytest.mark.parametrize("command", ["predict", "score"])
def test_new_data_that_cannot_be_read_is_a_located_error(tmp_path, capsys, text, code, command):
    """`ppl predict` and `ppl score` read the new rows with `ppl infer`'s reader: an empty,
    non-UTF-8 or ragged file (a row too long or too short) is its data error (E401, E402), exit 1."""
    (tmp_path / "m.vim").write_text("data y: real[N]\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1)\n")
    (tmp_path / "d.csv").write_text("y\n0.5\n1.5\n")
    assert cli.main(["infer", str(tmp_path / "m.vim"), str(tmp_path / "d.csv"), "--quiet",
                     "--output", str(tmp_path / "post.json")]) == 0
    (tmp_path / "new.csv").write_bytes(text)
    capsys.readouterr()
    assert cli.main([command, str(tmp_path / "m.vim"), str(tmp_path / "post.json"), str(tmp_path / "new.csv")]) == 1
    assert f"[{code}]" in capsys.readouterr().err


def test_new_rows_are_read_as_infer_reads_them(tmp_path):
    """A missing-value token, a blank line and a row of empty fields are empty cells, so held out
    (pandas dropped the blank line and refused the row of commas); a leading space is skipped."""
    from ppl.data.held_out import bind_new
    model = ppl.compile("data y: real[N]\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1)\n")
    (tmp_path / "new.csv").write_text("y\nNA\n 1.5\n\n2.5\n,\n3.5\n")
    new = bind_new(model, tmp_path / "new.csv", {}, None)
    assert new.observed["y"].tolist() == [False, True, False, True, False, True]
    np.testing.assert_array_equal(new.dataset.arrays["y"][[1, 3, 5]], [1.5, 2.5, 3.5])


def test_a_file_separated_by_semicolons_gets_the_separator_hint_from_both_readers(tmp_path, monkeypatch):
    """`x;y` with decimal commas (`1;2,0`): the rows split on the commas, and the csv module's E402 ('line
    2 has 2 fields but the header names 1') came without the hint that pyarrow's path gives (E403)."""
    path = csv_file(tmp_path, "x;y\n1;2,0\n2;3,9\n")
    hints = []
    for small in (reading.SMALL_CSV, 0):
        monkeypatch.setattr(reading, "SMALL_CSV", small)
        with pytest.raises(ppl.DataError) as info:
            RESPONSE.bind(path)
        hints.append((info.value.code in ("E402", "E403"), info.value.hint))
    assert hints == [(True, "the header is one column, `x;y`: ppl reads comma-separated values and this file looks "
                            "separated by `;`; save it with commas")] * 2
