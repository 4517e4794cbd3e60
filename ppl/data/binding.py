"""Data → typed numpy arrays for a checked model: columns found, values converted and checked
against the support of the distribution they feed, sizes read off, missing cells masked.

Validation happens here, once, at the edge; later stages trust these arrays.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ppl.diagnostics import DataError, nearest
from ppl.lang import ast
from ppl.lang.model import CheckedModel
from ppl.data.support import check_support

BOOL_WORDS = {"true": 1.0, "false": 0.0, "True": 1.0, "False": 0.0, "TRUE": 1.0, "FALSE": 0.0}


@dataclass(frozen=True)
class Dataset:
    """Arrays by data name (cat as 0-based codes), observed masks where cells are missing,
    sizes by name, and the labels of every categorical variable for reports."""

    arrays: dict
    masks: dict = field(default_factory=dict)
    sizes: dict = field(default_factory=dict)
    levels: dict = field(default_factory=dict)
    source: str = "data"


@dataclass(frozen=True)
class Table:
    """Named columns of one length, in order: text cells as `str` objects, a missing cell as
    None; the numeric columns of a DataFrame keep their dtype (NaN is missing)."""

    columns: dict

    def take(self, names: list[str]) -> np.ndarray:
        """The named columns side by side (rows × len(names))."""
        return np.stack([self.columns[name] for name in names], axis=1)


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
    return _read_csv(path.read_bytes(), name), name


def _read_csv(content: bytes, name: str) -> Table:
    """Cells of a CSV file as text, read with the C `csv` module (pandas costs a third of a
    second of import). Leading spaces of fields are skipped and an empty cell is missing; a
    blank line is a row of missing cells (in a one-column file, a missing value), but blank
    lines at the end are dropped."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = content[:exc.start].count(b"\n") + 1
        raise DataError("E402", f"malformed CSV: line {line} is not UTF-8 text (byte "
                        f"0x{content[exc.start]:02x})", source=name) from None
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True)
    header, rows, end = None, [], 0
    try:
        for fields in reader:
            start, end = end + 1, reader.line_num
            if header is None:
                header = _header(fields) if any(fields) else None  # blank lines before it are skipped
            elif not any(fields):
                rows.append([""] * len(header))
            elif len(fields) != len(header):
                raise DataError("E402", f"malformed CSV: line {start} has {_fields(len(fields))} but the "
                                f"header names {len(header)}", source=name, row=len(rows) + 1)
            else:
                rows.append(fields)
    except csv.Error as exc:
        raise DataError("E402", f"malformed CSV: line {reader.line_num}: {exc}", source=name) from None
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


def _header(fields: list[str]) -> list[str]:
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


def bind(model: CheckedModel, data, source: str | None = None) -> Dataset:
    """Bind `data` (CSV path, DataFrame or dict of arrays) to the model's data declarations."""
    table, name = read_table(data, source)
    arrays, masks, sizes, levels = {}, {}, dict(
        (k, v) for k, v in model.constants.items() if isinstance(v, int)), {}
    for decl in model.data.values():
        variable = model.variables[decl.name]
        if isinstance(table, dict):
            raw, columns = _from_dict(table, decl, name)
        else:
            columns = _columns(decl, table, name, sizes)
            raw = table.take(columns)
        values, mask, labels = _convert(raw, decl, variable, columns, name)
        _bind_sizes(decl, variable.shape, values.shape, variable.levels, labels, sizes, name)
        arrays[decl.name] = values if values.ndim == len(variable.shape) else values[:, 0]
        if mask is not None:
            if not model.factors_of(decl.name):
                row = int(np.argwhere(~mask)[0][0]) + 1
                raise DataError("E410", f"`{decl.name}` has an empty cell; only variables drawn with "
                                "`~` may have missing values", column=_col(columns, mask), row=row,
                                source=name, hint="fill in the cell or drop the row")
            masks[decl.name] = mask if mask.ndim == len(variable.shape) else mask[:, 0]
        if labels is not None:
            levels[decl.name] = labels
    dataset = Dataset(arrays, masks, sizes, levels, name)
    check_support(model, dataset)
    return dataset


def _col(columns, mask) -> str:
    bad = np.argwhere(~mask)[0]
    return columns[int(bad[1])] if mask.ndim == 2 and len(bad) > 1 else columns[0]


def _columns(decl: ast.DataDecl, table: Table, source: str, sizes: dict) -> list[str]:
    binding = decl.binding
    available = list(table.columns)
    if binding is None and len(decl.type.dims) == 2:
        dim = decl.type.dims[1]
        last = ast.Column(f"{decl.name}{dim}", decl.span)
        binding = ast.ColumnGroup(ast.Column(f"{decl.name}1", decl.span), last, decl.span)
    if binding is None:
        names = [decl.name]
    elif isinstance(binding, ast.Column):
        names = [binding.name]
    elif isinstance(binding, ast.ColumnList):
        names = [c.name for c in binding.columns]
    else:
        names = _group(binding, available, source, sizes)
    for column in names:
        if column not in available:
            guess = nearest(column, available)
            raise DataError("E403", f"no column `{column}` for data `{decl.name}`", column=column,
                            source=source, hint=f"did you mean `{guess}`?" if guess else
                            f"columns are: {', '.join(available[:12])}")
    return names


def _group(binding: ast.ColumnGroup, available: list[str], source: str, sizes: dict) -> list[str]:
    """`x1..xD`: the prefix, the first number, then consecutive columns up to the last."""
    first = re.fullmatch(r"(.*?)(\d+)(\D*)", binding.first.name)
    if first is None:
        raise DataError("E404", f"column group must start with a numbered column, not "
                        f"`{binding.first.name}`", source=source, hint="write `x1..xD`")
    prefix, start, suffix = first.group(1), int(first.group(2)), first.group(3)
    end = binding.last.name
    if not (end.startswith(prefix) and end.endswith(suffix)):
        raise DataError("E404", f"column group `{binding.first.name}..{end}` must share its prefix",
                        source=source)
    stop = end[len(prefix): len(end) - len(suffix) if suffix else None]
    if stop.isdigit():
        last = int(stop)
    elif isinstance(sizes.get(stop), int):
        last = sizes[stop]
    else:  # a size read off the data: every consecutive numbered column that exists
        last = start - 1
        while f"{prefix}{last + 1}{suffix}" in available:
            last += 1
        if last < start:
            raise DataError("E403", f"no columns `{prefix}{start}{suffix}`, `{prefix}{start + 1}{suffix}`, ...",
                            column=binding.first.name, source=source)
    return [f"{prefix}{i}{suffix}" for i in range(start, last + 1)]


def _from_dict(table: dict, decl: ast.DataDecl, source: str):
    if decl.name not in table:
        guess = nearest(decl.name, [str(k) for k in table])
        raise DataError("E403", f"no entry `{decl.name}` in the data", column=decl.name, source=source,
                        hint=f"did you mean `{guess}`?" if guess else None)
    value = np.asarray(table[decl.name])
    if value.ndim != len(decl.type.dims):
        raise DataError("E405", f"`{decl.name}` has {value.ndim} dimension(s) but is declared with "
                        f"{len(decl.type.dims)}", column=decl.name, source=source)
    raw = value if value.ndim == 2 else value[:, None]
    return (raw if raw.dtype.kind in "fiub" else raw.astype(object)), [decl.name] * raw.shape[1]


def _convert(raw: np.ndarray, decl: ast.DataDecl, variable, columns, source: str):
    """(values, observed mask or None, category labels or None) for one declaration."""
    elem = variable.elem
    if elem == "weight":
        return _weights(raw, decl, columns, source), None, None
    if raw.dtype.kind in "fiub" and elem in ("real", "int", "bool"):
        return _numeric_array(raw, decl, elem, columns, source)
    missing = _missing(raw)
    if elem == "cat":
        return _categories(raw, missing, decl, variable, columns, source)
    numeric = np.zeros(raw.shape)
    numeric[~missing] = _numbers(raw[~missing], BOOL_WORDS if elem == "bool" else {})
    bad = np.isnan(numeric) & ~missing
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise DataError("E406", f"`{raw[row, col]}` is not a number (data `{decl.name}` is {elem})",
                        column=columns[col], row=int(row) + 1, source=source)
    if elem in ("int", "bool"):
        fractional = (numeric != np.round(numeric)) & ~missing
        if fractional.any():
            row, col = np.argwhere(fractional)[0]
            raise DataError("E407", f"`{raw[row, col]}` is not an integer (data `{decl.name}` is {elem})",
                            column=columns[col], row=int(row) + 1, source=source)
    if elem == "bool":
        wrong = ~np.isin(numeric, (0, 1)) & ~missing
        if wrong.any():
            row, col = np.argwhere(wrong)[0]
            raise DataError("E408", f"`{raw[row, col]}` is not 0/1 or true/false", column=columns[col],
                            row=int(row) + 1, source=source)
    mask = ~missing if missing.any() else None
    values = np.where(missing, 0, numeric) if mask is not None else numeric
    if elem in ("int", "bool"):
        values = values.astype(np.int64)
    return values, mask, None


def _weights(raw, decl, columns, source) -> np.ndarray:
    """Row weights: a finite number ≥ 0 in every cell (fractional weights are importance weights;
    integers equal the rows repeated), float64."""
    missing = _missing(raw)
    values = np.full(raw.shape, np.nan)
    values[~missing] = _numbers(raw[~missing], {})
    bad = ~(np.isfinite(values) & (values >= 0))
    if bad.any():
        row, col = np.argwhere(bad)[0]
        cell = "an empty cell" if missing[row, col] else f"`{raw[row, col]}`"
        raise DataError("E430", f"weight `{decl.name}` has {cell}: a row weight is a finite number ≥ 0",
                        column=columns[col], row=int(row) + 1, source=source,
                        hint="a weight counts the observations a row stands for; 0 drops the row")
    return values


def _missing(raw: np.ndarray) -> np.ndarray:
    """Where cells are missing: None (an empty CSV cell) or NaN."""
    if raw.dtype.kind == "f":
        return np.isnan(raw)
    if raw.dtype.kind != "O":
        return np.zeros(raw.shape, dtype=bool)
    return np.equal(raw, None) | np.not_equal(raw, raw)


def _numbers(cells: np.ndarray, words: dict) -> np.ndarray:
    """Floats of present cells (text or numbers), NaN where a cell is not a number; a cell
    found in `words` (true/false) stands for its value. One C-level cast in the common case;
    when it fails, each distinct text is parsed once. As with pandas, the text `nan`, `1_000`
    and non-ASCII digits are not numbers."""
    if cells.dtype.kind in "fiub":
        return cells.astype(float)
    try:
        text = "".join(cells.tolist())
        if text.isascii() and "_" not in text:
            return cells.astype(float)
    except (TypeError, ValueError):  # a cell that is not text, or text that is not a number
        pass
    distinct, inverse = np.unique(cells.astype(str), return_inverse=True)
    return np.array([_number(text, words) for text in distinct.tolist()], dtype=float)[inverse]


def _number(text: str, words: dict) -> float:
    if text in words:
        return words[text]
    if not text.isascii() or "_" in text:
        return np.nan
    try:
        return float(text)
    except ValueError:
        return np.nan


def _numeric_array(raw, decl, elem, columns, source):
    """A numeric array (dict input) needs no text parsing: NaN is missing, the rest is checked."""
    values = raw.astype(float)
    missing = np.isnan(values)
    if elem in ("int", "bool"):
        bad = (values != np.round(values)) & ~missing
        if elem == "bool":
            bad |= ~np.isin(values, (0, 1)) & ~missing
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise DataError("E407", f"`{raw[row, col]}` is not {'0/1' if elem == 'bool' else 'an integer'} "
                            f"(data `{decl.name}` is {elem})", column=columns[col], row=int(row) + 1, source=source)
    if np.isinf(values).any():
        row, col = np.argwhere(np.isinf(values))[0]
        raise DataError("E406", f"`{values[row, col]}` is not a finite number", column=columns[col],
                        row=int(row) + 1, source=source)
    mask = ~missing if missing.any() else None
    values = np.where(missing, 0, values) if mask is not None else values
    return (values.astype(np.int64) if elem in ("int", "bool") else values), mask, None


def _categories(raw, missing, decl, variable, columns, source):
    """Strings become codes of their sorted labels; integers 1..K are their own codes."""
    present = raw[~missing]
    numeric = _numbers(present, {})
    if len(present) and not np.isnan(numeric).any() and (numeric == np.round(numeric)).all():
        codes = np.zeros(raw.shape, dtype=np.int64)
        codes[~missing] = numeric.astype(np.int64) - 1
        limit = variable.levels if isinstance(variable.levels, int) else None
        out = (codes < 0) | (codes >= limit if limit else False)
        out &= ~missing
        if out.any():
            row, col = np.argwhere(out)[0]
            upper = f"1..{limit}" if limit else "1, 2, ..."
            raise DataError("E409", f"category {raw[row, col]} is out of range {upper}",
                            column=columns[col], row=int(row) + 1, source=source)
        count = limit or (int(codes.max()) + 1 if codes.size else 0)
        labels = [str(i) for i in range(1, count + 1)]
    else:
        unique, inverse = np.unique(present.astype(str), return_inverse=True)
        labels = [str(u) for u in unique]
        codes = np.zeros(raw.shape, dtype=np.int64)
        codes[~missing] = inverse
        if isinstance(variable.levels, int) and len(labels) > variable.levels:
            raise DataError("E409", f"`{decl.name}` has {len(labels)} categories but is declared with "
                            f"{variable.levels}", column=columns[0], source=source)
    mask = ~missing if missing.any() else None
    return codes, mask, labels


def _bind_sizes(decl, declared, shape, levels_dim, labels, sizes: dict, source: str) -> None:
    found = list(zip(declared, shape))
    if levels_dim is not None and labels is not None:
        found.append((levels_dim, len(labels)))
    for dim, value in found:
        if isinstance(dim, int):
            if dim != value:
                raise DataError("E411", f"`{decl.name}` is declared with size {dim} but has {value}",
                                column=decl.name, source=source)
            continue
        if sizes.setdefault(dim, value) != value:
            raise DataError("E411", f"size `{dim}` is {sizes[dim]} elsewhere but `{decl.name}` gives {value}",
                            column=decl.name, source=source)
