"""Reading data by columns: the header first, then only the columns a model binds, typed from
their declarations. A numeric column is float64 (NaN where missing); any other is a `Coded` text
column. CSV files are read by pyarrow (imported on first use), files under `SMALL_CSV` bytes by
the `csv` module, which is also the exact path that locates a malformed line. Parquet files by
pyarrow; a pandas DataFrame as it is."""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import numpy as np

from ppl.data.columns import Coded, arrow_values, dictionary_column, numeric_missing
from ppl.data.table import Table, header_names, locate_malformed, read_csv_text
from ppl.diagnostics import DataError

SMALL_CSV = 1 << 20  # bytes; a smaller CSV file is read without importing pyarrow (start-up time)
NUMERIC = ("real", "int", "weight")  # element types read as float64; bool and cat are read as text
BOOL_DIGITS = {"0", "1"}  # a bool column of these cells only is read as float64 too


def open_data(data, name: str | None, na: tuple):
    """A reader over a CSV or Parquet path or a pandas DataFrame: `.name`, `.columns` (names as
    pandas makes them), `.duplicates` (names given twice) and `.read(kinds) -> {column: array}`."""
    if type(data).__module__.startswith("pandas") and hasattr(data, "columns"):
        return FrameReader(data, name or "DataFrame", na)
    if not isinstance(data, (str, os.PathLike)):
        kind = type(data).__name__
        raise DataError("E811", f"cannot read data of type {kind}: give a CSV or Parquet path, a pandas "
                        "DataFrame or a dict of arrays by column name", source=name or kind,
                        hint="a pandas Series is a table by `series.to_frame()`; an array by `{'y': array}`")
    path = Path(data)
    name = name or str(data)
    if not path.is_file():
        raise DataError("E400", f"no data file at {path}", source=name)
    if path.suffix.lower() in (".parquet", ".pq"):
        return ParquetReader(path, name, na)
    return CsvReader(path, name, na)


def unreadable(exc: OSError, name: str) -> DataError:
    return DataError("E413", f"cannot read the data file: {exc.strerror or exc}", source=name,
                     hint="check that the file exists and that you may read it")


class CsvReader:
    """A CSV file: the header is parsed here (one record), the body by pyarrow or `csv`."""

    def __init__(self, path: Path, name: str, na: tuple):
        self.path, self.name, self.na = path, name, na
        try:
            with open(path, "rb") as handle:
                head = handle.read(1 << 16)
                size = handle.seek(0, 2)
        except OSError as exc:
            raise unreadable(exc, name) from None
        fields, self.header_lines = _first_record(head)
        # a small file, or one whose first 64 kB hold no plain header line: the exact reader, now
        # (on the bytes read already when they are the whole file)
        self.text = self._text(head if len(head) == size else None) if size < SMALL_CSV or fields is None else None
        if fields is None:
            fields = list(self.text.columns)
        self.columns = header_names(fields)
        self.duplicates = sorted({f for f in fields if fields.count(f) > 1})

    def _text(self, content: bytes | None = None) -> Table:
        """The cells of the whole file, from `content` (its bytes) when given."""
        if content is None:
            try:
                content = self.path.read_bytes()
            except OSError as exc:
                raise unreadable(exc, self.name) from None
        return read_csv_text(content, self.name)

    def _read(self, plan: dict, kinds: dict) -> dict:
        if self.text is None:
            try:
                return self._arrow(plan, kinds)
            except _Irregular:  # the malformed line, found in constant memory, else the exact reader
                locate_malformed(self.path, self.name)
                self.text = self._text()
        return by_declaration(plan, {c: _text_column(self.text.columns[c], kinds[c], self.na) for c in kinds})

    def read(self, plan: dict, kinds: dict) -> dict:
        """{name: raw}: a numeric column's cells that read as a missing-value token's number are
        missing (`-999.0` for `--na -999`), as in a DataFrame or a Parquet file."""
        return {name: [numeric_missing(v, self.na) if isinstance(v, np.ndarray) else v for v in raw]
                if isinstance(raw, list) else numeric_missing(raw, self.na)
                for name, raw in self._read(plan, kinds).items()}

    def _arrow(self, plan: dict, kinds: dict) -> dict:
        """Columns typed by pyarrow; a column that fails to convert is read again as text, and a
        file that fails to parse goes to the exact reader (`_Irregular`)."""
        import pyarrow as pa

        from ppl.data.arrow_csv import read_blocks

        text = pa.dictionary(pa.int32(), pa.string())
        types = {c: pa.float64() if kind in NUMERIC else text for c, kind in kinds.items()}
        while True:
            try:
                return read_blocks(self, plan, types)
            except pa.ArrowInvalid as exc:
                found = re.search(r"column #(\d+)", str(exc))
                column = self.columns[int(found.group(1))] if found else None
                if column not in types or types[column] == text:
                    raise _Irregular from None
                types[column] = text
            except OSError as exc:
                raise unreadable(exc, self.name) from None

    def options(self, types: dict, block_size: int | None = None) -> dict:
        """Keyword arguments of `pyarrow.csv.read_csv` / `open_csv` for the given column types."""
        import pyarrow.csv as pacsv

        read = pacsv.ReadOptions(skip_rows=self.header_lines, column_names=self.columns,
                                 **({"block_size": block_size} if block_size else {}))
        return {"read_options": read,
                "parse_options": pacsv.ParseOptions(ignore_empty_lines=False),
                "convert_options": pacsv.ConvertOptions(
                    include_columns=list(types), column_types=types, null_values=list(self.na),
                    strings_can_be_null=True, quoted_strings_can_be_null=True)}


def _text_column(cells: np.ndarray, kind: str, na: tuple):
    """A column of text cells (None where empty): float64 when every present cell is a plain
    number (one C-level cast), as for a `bool` column of 0 and 1 only (the common case: no codes
    and labels to make, and nothing for the exact path to report), else `Coded`."""
    present = ~np.equal(cells, None)
    if kind == "bool" and set(cells[present].tolist()) <= BOOL_DIGITS:
        return _floats(cells, present)
    if kind in NUMERIC:
        text = "".join(cells[present].tolist())
        if text.isascii() and "_" not in text and not any(c.isalpha() and c not in "eE" for c in set(text)):
            try:
                return _floats(cells, present)
            except ValueError:  # text that is not a number: the exact path names it
                pass
    return Coded.of_cells(cells, na)


def _floats(cells: np.ndarray, present: np.ndarray) -> np.ndarray:
    """The present cells cast to float64 in one C-level call, NaN elsewhere."""
    values = np.full(len(cells), np.nan)
    values[present] = cells[present].astype(float)
    return values


class _Irregular(Exception):
    """A CSV file that pyarrow cannot take as it is (a malformed line, bytes that are not text)."""


def _first_record(head: bytes):
    """(fields, lines up to the end of the header) from the first bytes of a CSV file, or
    (None, 0) when they hold no complete one-line header in UTF-8 (the exact reader then reads)."""
    lines = head.split(b"\n")[:-1]  # complete lines only
    for number, line in enumerate(lines, start=1):
        try:
            text = line.decode("utf-8-sig" if number == 1 else "utf-8").rstrip("\r")
        except UnicodeDecodeError:
            return None, 0
        if not text.strip(" ,"):
            continue  # blank lines before the header are skipped
        if text.count('"') % 2:
            return None, 0  # a quoted name that runs over the line
        return next(csv.reader([text], skipinitialspace=True)), number
    return None, 0


def arrow_column(chunked, na: tuple):
    """A pyarrow column as float64 (NaN where missing) or as a `Coded` text column."""
    import pyarrow as pa

    if pa.types.is_dictionary(chunked.type):
        return dictionary_column(chunked, na)
    if pa.types.is_string(chunked.type) or pa.types.is_large_string(chunked.type):
        import pyarrow.compute as pc
        return dictionary_column(pc.dictionary_encode(chunked), na)
    chunks = [arrow_values(c, np.float64, np.nan) for c in chunked.cast(pa.float64()).chunks]
    return np.concatenate(chunks) if chunks else np.zeros(0)


class ParquetReader:
    """A Parquet file: the schema names the columns; only the bound ones are read."""

    def __init__(self, path: Path, name: str, na: tuple):
        import pyarrow.parquet as pq

        self.path, self.name, self.na = path, name, na
        try:
            self.file = pq.ParquetFile(path)
        except OSError as exc:
            raise unreadable(exc, name) from None
        except Exception as exc:  # pyarrow's error for bytes that are not Parquet
            raise DataError("E402", f"not a Parquet file: {exc}", source=name) from None
        names = self.file.schema_arrow.names
        self.columns = names
        self.duplicates = sorted({f for f in names if names.count(f) > 1})

    def read(self, plan: dict, kinds: dict) -> dict:
        table = self.file.read(columns=list(kinds))
        if table.num_rows == 0:
            raise DataError("E401", "the data file has a header but no rows", source=self.name)
        return by_declaration(plan, _columns_of(table, kinds, self.na))


def by_declaration(plan: dict, found: dict) -> dict:
    """Columns ({column: array}) grouped by declaration ({name: [array, ...]})."""
    return {name: [found[c] for c in columns] for name, columns in plan.items()}


def _columns_of(table, kinds: dict, na: tuple) -> dict:
    """The columns of a pyarrow table as arrays, each Arrow column released once converted."""
    found = {}
    for column in kinds:
        found[column] = typed_column(table.column(column), na)
        table = table.drop_columns([column])
    return found


def typed_column(chunked, na: tuple):
    """A column as `arrow_column` reads it; a numeric one (Parquet's, or a CSV's read as numbers)
    has no cell texts, so a token that reads as a number marks its cells by value (as in a
    DataFrame)."""
    values = arrow_column(chunked, na)
    return numeric_missing(values, na) if isinstance(values, np.ndarray) else values


class FrameReader:
    """A pandas DataFrame: numeric columns as float64, the others as text."""

    def __init__(self, frame, name: str, na: tuple):
        self.frame, self.name, self.na = frame, name, na
        names = [str(c) for c in frame.columns]
        self.columns = names
        self.duplicates = sorted({f for f in names if names.count(f) > 1})

    def read(self, plan: dict, kinds: dict) -> dict:
        found = {}
        for column in kinds:
            series = self.frame.iloc[:, self.columns.index(column)]
            values = series.to_numpy()
            if values.dtype.kind in "fiub" and kinds[column] != "cat":
                found[column] = numeric_missing(values.astype(float), self.na)
            elif values.dtype.kind in "fiub":
                found[column] = Coded.of_cells(values, self.na)
            else:
                cells = np.where(series.isna().to_numpy(), None, values.astype(object))
                found[column] = Coded.of_cells(cells, self.na)
        return by_declaration(plan, found)
