"""Data → typed numpy arrays for a checked model: columns found, values converted and checked
against the support of the distribution they feed, sizes read off, missing cells masked.

Validation happens here, once, at the edge; later stages trust these arrays. Reading the
columns is `ppl.data.reading`'s job; text cells arrive as `Coded` columns (codes + labels).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ppl.diagnostics import DataError, nearest
from ppl.lang import ast
from ppl.lang.model import CheckedModel
from ppl.data.columns import Coded, na_tokens, numeric_missing
from ppl.data.reading import open_data
from ppl.data.support import check_support
from ppl.data.table import separated

BOOL_WORDS = {"true": 1.0, "false": 0.0, "True": 1.0, "False": 0.0, "TRUE": 1.0, "FALSE": 0.0}
INT_LIMIT = 2.0 ** 63  # an `int` cell must be smaller in magnitude (numpy's int64)
# A `cat` column may have at most this many levels, or LEVELS_PER_CATEGORY per distinct category
# present if that is more: integer codes 1..K (or a declared K) must not imply far more levels
# than the data hold, since every level costs memory downstream (a Dirichlet parameter per level).
LEVELS_FLOOR = 100_000
LEVELS_PER_CATEGORY = 10


@dataclass(frozen=True)
class Dataset:
    """Arrays by data name (cat as 0-based codes), observed masks where cells are missing,
    sizes by name, the labels of every categorical variable for reports, and notes for the
    reader (columns the model does not use)."""

    arrays: dict
    masks: dict = field(default_factory=dict)
    sizes: dict = field(default_factory=dict)
    levels: dict = field(default_factory=dict)
    source: str = "data"
    notes: tuple = ()


def bind(model: CheckedModel, data, source: str | None = None, na=None) -> Dataset:
    """Bind `data` (CSV or Parquet path, DataFrame or dict of arrays) to the model's data
    declarations. `na`: cell texts that mean "missing", besides pandas' defaults."""
    tokens = na_tokens(na)
    if isinstance(data, dict):
        name = source or "dict"
        raws = {d.name: _from_dict(data, d, name, tokens) for d in model.data.values()}
        return assemble(model, raws, name)
    reader = open_data(data, source, tokens)
    plan = plan_columns(model, reader)
    kinds = column_kinds(model, plan)
    found = reader.read(plan, kinds)
    rows = filled_rows(found, reader.name)
    raws = {d: (_head(found[d], rows), columns) for d, columns in plan.items()}
    unused = [c for c in reader.columns if c not in kinds]
    notes = (f"columns not used by the model: {', '.join(unused)}",) if unused else ()
    return assemble(model, raws, reader.name, notes + _dropped_note(found, rows))


def _dropped_note(found: dict, rows: int) -> tuple:
    """The note that trailing rows with every read cell missing were left out, if any were: a
    response left empty on the last rows would otherwise vanish unsaid."""
    first = next(iter(found.values()), None)
    first = first[0] if isinstance(first, list) else first
    total = len(first.codes if isinstance(first, Coded) else first) if first is not None else rows
    if total == rows:
        return ()
    which = f"the last {total - rows} rows (rows {rows + 1}-{total}) have" if total - rows > 1 else \
        f"the last row (row {total}) has"
    return (f"{which} every cell the model reads missing and {'are' if total - rows > 1 else 'is'} left out, as "
            "blank lines at the end of a file are (to predict such rows: `ppl predict`, `Posterior.predict`)",)


def plan_columns(model: CheckedModel, reader) -> dict:
    """The columns of every data declaration, checked against the reader's header."""
    if reader.duplicates:
        column = reader.duplicates[0]
        raise DataError("E412", f"the header names column `{column}` more than once", column=column,
                        source=reader.name, hint="rename one of them: a model binds a column by its name")
    sizes = {k: v for k, v in model.constants.items() if isinstance(v, int)}
    return {d.name: _columns(d, reader.columns, reader.name, sizes) for d in model.data.values()}


def column_kinds(model: CheckedModel, plan: dict) -> dict:
    """The element type (real, int, bool, cat) each column is read as."""
    return {column: model.variables[name].elem for name, columns in plan.items() for column in columns}


def filled_rows(found: dict, name: str) -> int:
    """The number of rows up to the last one with a cell present: trailing rows whose read cells
    are all missing (blank lines at the end of a file) are dropped. `found`: {name: raw}."""
    present = None
    for raw in found.values():
        for values in (raw if isinstance(raw, list) else [raw]):
            here = ~(values.missing if isinstance(values, Coded) else np.isnan(values))
            here = here if here.ndim == 1 else here.any(axis=1)
            present = here if present is None else present | here
    rows = int(np.flatnonzero(present)[-1]) + 1 if present is not None and present.any() else 0
    if not rows and found:
        raise DataError("E401", "the data file has a header but no rows", source=name)
    return rows


def _head(raw, rows: int):
    if isinstance(raw, list):
        return [_head(values, rows) for values in raw]
    return Coded(raw.codes[:rows], raw.labels) if isinstance(raw, Coded) else raw[:rows]


def assemble(model: CheckedModel, raws: dict, name: str, notes: tuple = ()) -> Dataset:
    """Convert and check every declaration's columns ({name: (raw, columns)}), read off sizes."""
    arrays, masks, sizes, levels = {}, {}, dict(
        (k, v) for k, v in model.constants.items() if isinstance(v, int)), {}
    for decl in model.data.values():
        variable = model.variables[decl.name]
        raw, columns = raws[decl.name]
        values, mask, labels = _convert(raw, decl, variable, columns, name)
        _bind_sizes(decl, variable.shape, values.shape, variable.levels, labels, sizes, name)
        arrays[decl.name] = values if values.ndim == len(variable.shape) else values[:, 0]
        if mask is not None:
            covariate_has_no_missing(model, decl.name, mask, columns, name)
            masks[decl.name] = mask if mask.ndim == len(variable.shape) else mask[:, 0]
        if labels is not None:
            levels[decl.name] = labels
    dataset = Dataset(arrays, masks, sizes, levels, name, notes)
    check_support(model, dataset)
    return dataset


def covariate_has_no_missing(model: CheckedModel, name: str, mask: np.ndarray, columns, source: str) -> None:
    """Only a variable drawn with `~` may have missing cells (E410 names the first one)."""
    if not model.factors_of(name):
        row = int(np.argwhere(~mask)[0][0]) + 1
        raise DataError("E410", f"`{name}` has an empty cell; only variables drawn with "
                        "`~` may have missing values", column=_col(columns, mask), row=row,
                        source=source, hint="fill in the cell or drop the row")


def _col(columns, mask) -> str:
    bad = np.argwhere(~mask)[0]
    return columns[int(bad[1])] if mask.ndim == 2 and len(bad) > 1 else columns[0]


def _columns(decl: ast.DataDecl, available: list[str], source: str, sizes: dict) -> list[str]:
    binding = decl.binding
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
                            source=source, hint=separated(available) or (f"did you mean `{guess}`?" if guess else
                                                                          f"columns are: {', '.join(available[:12])}"))
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


def _from_dict(table: dict, decl: ast.DataDecl, source: str, na: tuple):
    if decl.name not in table:
        guess = nearest(decl.name, [str(k) for k in table])
        raise DataError("E403", f"no entry `{decl.name}` in the data", column=decl.name, source=source,
                        hint=f"did you mean `{guess}`?" if guess else None)
    value = np.asarray(table[decl.name])
    if value.ndim != len(decl.type.dims):
        raise DataError("E405", f"`{decl.name}` has {value.ndim} dimension(s) but is declared with "
                        f"{len(decl.type.dims)}", column=decl.name, source=source)
    raw = value if value.ndim == 2 else value[:, None]
    columns = [decl.name] * raw.shape[1]
    if raw.dtype.kind in "fiub":
        return numeric_missing(raw, na), columns
    return [Coded.of_cells(raw[:, i].astype(object), na) for i in range(raw.shape[1])], columns


def _convert(raw, decl: ast.DataDecl, variable, columns, source: str):
    """(values, observed mask or None, category labels or None) for one declaration. `raw` is a
    numeric array (rows × columns, NaN missing) or a list of columns, each float64 or `Coded`."""
    elem = variable.elem
    if elem == "weight":
        return _weights(raw, decl, columns, source), None, None
    if isinstance(raw, list) and elem != "cat" and all(isinstance(c, np.ndarray) for c in raw):
        raw = np.stack(raw, axis=1) if len(raw) > 1 else raw[0][:, None]
    if isinstance(raw, np.ndarray) and elem != "cat":
        return _numeric_array(raw, decl, elem, columns, source)
    if isinstance(raw, np.ndarray):
        raw = [raw[:, i] for i in range(raw.shape[1])]
    if elem == "cat":
        na = ()  # the columns are normalised already; a float column has no text to compare
        coded = Coded.stack([c if isinstance(c, Coded) else Coded.of_cells(c, na) for c in raw], na)
        return _categories(coded, decl, variable, columns, source)
    return _text_numbers(raw, decl, elem, columns, source)


def _text_numbers(raw: list, decl, elem, columns, source):
    """Numbers from columns of text (and float64): not a number (E406), not finite (E406), not an
    integer (E407), not 0/1 (E408), beyond int64 (E414), each at its first cell in row order."""
    words = BOOL_WORDS if elem == "bool" else {}
    numeric = np.empty((len(raw[0]), len(raw)))
    missing = np.empty(numeric.shape, dtype=bool)
    for i, column in enumerate(raw):
        if isinstance(column, Coded):
            numeric[:, i] = np.append(_numbers(column.labels, words), 0.0)[column.codes]
            missing[:, i] = column.missing
        else:
            numeric[:, i], missing[:, i] = column, np.isnan(column)

    def fail(bad, code, what):
        if bad.any():
            row, col = (int(i) for i in np.argwhere(bad)[0])
            cell = raw[col].text(row) if isinstance(raw[col], Coded) else raw[col][row]
            raise DataError(code, f"`{cell}` {what}", column=columns[col], row=row + 1, source=source)

    fail(np.isnan(numeric) & ~missing, "E406", f"is not a number (data `{decl.name}` is {elem})")
    fail(np.isinf(numeric), "E406", "is not a finite number")
    if elem in ("int", "bool"):
        fail((numeric != np.round(numeric)) & ~missing, "E407", f"is not an integer (data `{decl.name}` is {elem})")
    if elem == "bool":
        fail(~np.isin(numeric, (0, 1)) & ~missing, "E408", "is not 0/1 or true/false")
    if elem == "int":
        fail(np.abs(numeric) >= INT_LIMIT, "E414", "is too large for an integer (at most 2^63 - 1 in magnitude)")
    mask = ~missing if missing.any() else None
    values = np.where(missing, 0, numeric) if mask is not None else numeric
    return (values.astype(np.int64) if elem in ("int", "bool") else values), mask, None


def _weights(raw, decl, columns, source) -> np.ndarray:
    """Row weights: a finite number ≥ 0 in every cell (fractional weights are importance weights;
    integers equal the rows repeated), float64. `raw` as `_convert` takes it."""
    if isinstance(raw, np.ndarray):
        raw = [raw[:, i] for i in range(raw.shape[1])]
    values = np.stack([np.append(_numbers(c.labels, {}), np.nan)[c.codes] if isinstance(c, Coded)
                       else np.asarray(c, float) for c in raw], axis=1)
    missing = np.stack([c.missing if isinstance(c, Coded) else np.isnan(np.asarray(c, float)) for c in raw], axis=1)
    bad = ~(np.isfinite(values) & (values >= 0))
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        column = raw[col]
        cell = ("an empty cell" if missing[row, col] else
                f"`{column.text(row)}`" if isinstance(column, Coded) else f"`{column[row]:g}`")
        raise DataError("E430", f"weight `{decl.name}` has {cell}: a row weight is a finite number ≥ 0",
                        column=columns[col], row=row + 1, source=source,
                        hint="a weight counts the observations a row stands for; 0 drops the row")
    return values

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
    values = raw.astype(float, copy=False)
    if elem == "real" and np.isfinite(values).all():  # the usual case: one pass says no NaN and no infinity
        return values, None, None
    missing = np.isnan(values)
    if elem in ("int", "bool"):
        bad = (values != np.round(values)) & ~missing
        if elem == "bool":
            bad |= (values != 0) & (values != 1) & ~missing
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise DataError("E407", f"`{raw[row, col]}` is not {'0/1' if elem == 'bool' else 'an integer'} "
                            f"(data `{decl.name}` is {elem})", column=columns[col], row=int(row) + 1, source=source)
    if np.isinf(values).any():
        row, col = np.argwhere(np.isinf(values))[0]
        raise DataError("E406", f"`{values[row, col]}` is not a finite number", column=columns[col],
                        row=int(row) + 1, source=source)
    if elem == "int" and (np.abs(values) >= INT_LIMIT).any():
        row, col = np.argwhere(np.abs(values) >= INT_LIMIT)[0]
        raise DataError("E414", f"`{raw[row, col]}` is too large for an integer (at most 2^63 - 1 in "
                        "magnitude)", column=columns[col], row=int(row) + 1, source=source)
    mask = ~missing if missing.any() else None
    values = np.where(missing, 0, values) if mask is not None else values
    return (values.astype(np.int64) if elem in ("int", "bool") else values), mask, None


def _categories(coded: Coded, decl, variable, columns, source):
    """Text labels become codes of their sorted labels; integers 1..K are their own codes. The
    number of levels is checked (`_check_levels`) before anything of that size exists."""
    numbers = _numbers(coded.labels, {})
    limit = variable.levels if isinstance(variable.levels, int) else None
    if len(numbers) and not np.isnan(numbers).any() and (numbers == np.round(numbers)).all():
        out = (numbers < 1) | ~np.isfinite(numbers) | (numbers > limit if limit else False)
        if out.any():
            row, col = coded.first(out)
            upper = f"1..{limit}" if limit else "1, 2, ..."
            # 0-based codes, as many data sets write them: adding 1 would fit
            zero = numbers.min() == 0 and np.isfinite(numbers).all() and (not limit or numbers.max() < limit)
            raise DataError("E409", f"category {coded.text((row, col))} is out of range {upper}",
                            column=columns[col], row=row + 1, source=source,
                            hint="integer codes of a `cat` column count from 1, and these start at 0: add 1 to the "
                                 "column, or give the levels as text labels" if zero else None)
        count = limit or int(numbers.max())
        _check_levels(count, coded, None if limit else numbers == numbers.max(), decl, columns, source)
        codes = np.append(numbers - 1, 0).astype(np.int32)[coded.codes]
        labels = [str(i) for i in range(1, count + 1)]
    else:
        labels = coded.labels.tolist()
        codes = np.maximum(coded.codes, 0).astype(np.int32, copy=False)  # missing (-1) → 0
        if limit and len(labels) > limit:
            raise DataError("E409", f"`{decl.name}` has {len(labels)} categories but is declared with "
                            f"{limit}", column=columns[0], source=source)
        _check_levels(limit or len(labels), coded, None, decl, columns, source)
    mask = ~coded.missing if coded.missing.any() else None
    return codes, mask, labels


def _check_levels(count: int, coded: Coded, largest, decl, columns, source) -> None:
    """At most max(LEVELS_FLOOR, LEVELS_PER_CATEGORY × categories present) levels (E415), at the
    cell with the largest code when the codes imply the count."""
    used = len(coded.labels)
    if count <= max(LEVELS_FLOOR, LEVELS_PER_CATEGORY * used):
        return
    row, col = coded.first(largest) if largest is not None else (None, 0)
    why = (f"codes up to {count}" if row is not None else f"{count} levels declared")
    raise DataError("E415", f"`{decl.name}` would have {count} levels ({why}) but the data hold {used} "
                    "distinct categories", column=columns[col], row=None if row is None else row + 1,
                    source=source, hint=f"a `cat` column may have at most {LEVELS_FLOOR:,} levels, or "
                    f"{LEVELS_PER_CATEGORY} per category present; recode it 1..K or use text labels")


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
