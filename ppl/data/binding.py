"""Data → typed numpy arrays for a checked model: columns found, values converted and checked
against the support of the distribution they feed, sizes read off, missing cells masked.

Validation happens here, once, at the edge; later stages trust these arrays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ppl.diagnostics import DataError, nearest
from ppl.lang import ast
from ppl.lang.model import CheckedModel
from ppl.data.support import check_support


@dataclass(frozen=True)
class Dataset:
    """Arrays by data name (cat as 0-based codes), observed masks where cells are missing,
    sizes by name, and the labels of every categorical variable for reports."""

    arrays: dict
    masks: dict = field(default_factory=dict)
    sizes: dict = field(default_factory=dict)
    levels: dict = field(default_factory=dict)
    source: str = "data"


def read_table(data, source: str | None = None):
    """A pandas DataFrame from a CSV path or a DataFrame; a dict of arrays is returned as is."""
    if isinstance(data, pd.DataFrame):
        return data, source or "DataFrame"
    if isinstance(data, dict):
        return data, source or "dict"
    path = Path(data)
    name = source or str(data)
    if not path.is_file():
        raise DataError("E400", f"no data file at {path}", source=name)
    try:
        # Blank lines are kept: in a one-column file a blank line is a missing value.
        table = pd.read_csv(path, skipinitialspace=True, keep_default_na=False, na_values=[""],
                            dtype=str, skip_blank_lines=False)
    except pd.errors.EmptyDataError:
        raise DataError("E401", "the data file is empty", source=name,
                        hint="the first line must name the columns") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        line = re.search(r"line (\d+)", str(exc))
        row = int(line.group(1)) - 1 if line else None  # the header is line 1
        raise DataError("E402", f"malformed CSV: {_first_line(exc)}", source=name, row=row) from None
    blank = table.isna().all(axis=1).to_numpy()
    trailing = len(blank) - (np.argmin(blank[::-1]) if not blank.all() else 0)
    table = table.iloc[:trailing] if not blank.all() else table.iloc[:0]
    if table.shape[0] == 0:
        raise DataError("E401", "the data file has a header but no rows", source=name)
    return table, name


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
            raw = table[columns].to_numpy()
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


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0]


def _col(columns, mask) -> str:
    bad = np.argwhere(~mask)[0]
    return columns[int(bad[1])] if mask.ndim == 2 and len(bad) > 1 else columns[0]


def _columns(decl: ast.DataDecl, table: pd.DataFrame, source: str, sizes: dict) -> list[str]:
    binding = decl.binding
    available = [str(c) for c in table.columns]
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
    if raw.dtype.kind in "fiub" and elem in ("real", "int", "bool"):
        return _numeric_array(raw, decl, elem, columns, source)
    missing = pd.isna(pd.DataFrame(raw)).to_numpy()
    if elem == "cat":
        return _categories(raw, missing, decl, variable, columns, source)
    frame = pd.DataFrame(raw)
    if elem == "bool":
        frame = frame.replace({"true": 1, "false": 0, "True": 1, "False": 0, "TRUE": 1, "FALSE": 0,
                               True: 1, False: 0})
    numeric = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
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
    numeric = pd.to_numeric(pd.Series(present.ravel()), errors="coerce")
    if len(present) and numeric.notna().all() and (numeric == numeric.round()).all():
        codes = np.zeros(raw.shape, dtype=np.int64)
        codes[~missing] = numeric.to_numpy().astype(np.int64) - 1
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
