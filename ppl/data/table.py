"""The exact CSV reader (the C `csv` module): every cell as text, a malformed line located. It
reads small files (no pyarrow import at start-up) and any file pyarrow cannot take as it is;
`read_table` gives its cells to callers that want the file as text."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ppl.diagnostics import DataError


@dataclass(frozen=True)
class Table:
    """Named columns of one length, in order: text cells as `str` objects, a missing cell as
    None; the numeric columns of a DataFrame keep their dtype (NaN is missing)."""

    columns: dict


def read_table(data, source: str | None = None):
    """A `Table` from a CSV path or a pandas DataFrame; a dict of arrays is returned as is."""
    if isinstance(data, dict):
        return data, source or "dict"
    if type(data).__module__.startswith("pandas") and hasattr(data, "columns"):
        return _frame_table(data), source or "DataFrame"
    path = Path(data)
    name = source or str(data)
    if not path.is_file():
        raise DataError("E400", f"no data file at {path}", source=name)
    return read_csv_text(path.read_bytes(), name), name


def read_csv_text(content: bytes, name: str) -> Table:
    """Cells of a CSV file as text. Leading spaces of fields are skipped and an empty cell is
    missing; a blank line is a row of missing cells (in a one-column file, a missing value), but
    blank lines at the end are dropped."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = content[:exc.start].count(b"\n") + 1
        raise _not_text(line, content[exc.start], name) from None
    header, rows = _regular(text)
    if header is None:  # blank lines, ragged rows or text `csv` rejects: read record by record
        for header, fields in _records(io.StringIO(text, newline=""), name):
            if fields is not None:
                rows.append(fields)
    if header is None:
        raise DataError("E401", "the data file is empty", source=name,
                        hint="the first line must name the columns")
    cells = np.array(rows, dtype=object).reshape(len(rows), len(header))
    empty = cells == ""
    filled = np.flatnonzero(~empty.all(axis=1))
    if not filled.size:
        raise DataError("E401", "the data file has a header but no rows", source=name)
    cells[empty] = None
    cells = cells[:filled[-1] + 1]
    return Table({column: cells[:, i] for i, column in enumerate(header)})


def _regular(text: str) -> tuple:
    """(header, rows) of a CSV text whose first line is the header and every later line a row
    of as many fields, parsed whole by the C reader with no Python step per row (what `_records`
    yields for it); (None, []) for any other text, which `_records` reads and locates."""
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), skipinitialspace=True))
    except csv.Error:
        return None, []
    if not records or not any(records[0]):
        return None, []
    header, rows = header_names(records[0]), records[1:]
    if set(map(len, rows)) - {len(header)}:
        return None, []
    return header, rows


def locate_malformed(path, name: str) -> None:
    """Raise the located error (E402) of the first malformed line of a CSV file, read line by
    line in constant memory; return if there is none."""
    def lines(handle):
        for number, line in enumerate(handle, start=1):
            try:
                yield line.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise _not_text(number, line[exc.start], name) from None

    with open(path, "rb") as handle:
        for _ in _records(lines(handle), name):
            pass


def _records(lines, name: str):
    """(header, fields) for the header (fields None) and then every row of a CSV text; a row with
    the wrong number of fields, or text the `csv` module rejects, is E402 naming its line."""
    reader = csv.reader(lines, skipinitialspace=True)
    header, rows, end = None, 0, 0
    try:
        for fields in reader:
            start, end = end + 1, reader.line_num
            if header is None:
                header = header_names(fields) if any(fields) else None  # blank lines before it are skipped
                if header is not None:
                    yield header, None
                continue
            if not any(fields):
                fields = [""] * len(header)
            elif len(fields) != len(header):
                raise DataError("E402", f"malformed CSV: line {start} has {_fields(len(fields))} but the "
                                f"header names {len(header)}", source=name, row=rows + 1, hint=separated(header))
            rows += 1
            yield header, fields
    except csv.Error as exc:
        raise DataError("E402", f"malformed CSV: line {reader.line_num}: {exc}", source=name) from None


def separated(available: list) -> str | None:
    """The hint for a header of one column holding `;` or tabs: a file separated otherwise."""
    if len(available) == 1:
        for separator, shown in ((";", "`;`"), ("\t", "tabs")):
            if separator in available[0]:
                return (f"the header is one column, `{available[0]}`: ppl reads comma-separated values and this "
                        f"file looks separated by {shown}; save it with commas")
    return None


def _not_text(line: int, byte: int, name: str) -> DataError:
    return DataError("E402", f"malformed CSV: line {line} is not UTF-8 text (byte 0x{byte:02x})", source=name)


def header_names(fields: list[str]) -> list[str]:
    """Column names as pandas makes them: `Unnamed: i` for an empty one, `x.1` for a second `x`."""
    names = []
    for i, text in enumerate(fields):
        text = text or f"Unnamed: {i}"
        name, copy = text, 0
        while name in names:
            copy += 1
            name = f"{text}.{copy}"
        names.append(name)
    return names


def _fields(count: int) -> str:
    return f"{count} field" + ("" if count == 1 else "s")


def _frame_table(frame) -> Table:
    """A pandas DataFrame as a `Table`, without importing pandas: numeric columns as they are,
    the others as objects with None where the frame has a missing value."""
    missing = frame.isna().to_numpy()
    columns = {}
    for i, column in enumerate(frame.columns):
        values = frame.iloc[:, i].to_numpy()
        if values.dtype.kind not in "fiub":
            values = np.where(missing[:, i], None, values.astype(object))
        columns[str(column)] = values
    return Table(columns)
