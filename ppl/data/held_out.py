"""New data for a fitted model (`Posterior.predict`, `score`): the responses (data drawn with `~`)
may be empty or absent, and every `cat` column is coded by the training levels.

- An empty cell or an absent column of a response is *held out*: it gets a placeholder value
  (1, or the first training level) so that binding checks pass, and a False in `observed`; the
  engine then gives it zero weight (ppl.infer.predict.fold).
- A `cat` column keeps the training codes; a label that training never saw is error E350, at the
  column and the first row that holds it. The group column (LDA's `doc`, a hierarchy's `site`) is
  the exception: its groups are the ones present in the new data, in label order, and `seen`
  holds each one's training index (−1: a new group).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ppl.data.binding import Dataset, _columns
from ppl.data.columns import na_tokens, token_numbers
from ppl.data.table import read_csv_text
from ppl.diagnostics import DataError

PLACEHOLDER = "1"  # in the support of every response family (0/1, counts, categories 1..K, reals, > 0)


@dataclass(frozen=True)
class NewData:
    """The bound new data (no masks), which response cells the file gave (`observed`: name → mask
    shaped like the array), and the groups: their labels and training indices (−1: new)."""

    dataset: Dataset
    observed: dict
    group_labels: list
    seen: np.ndarray


@dataclass(frozen=True)
class NewRows:
    """New data as read, before binding: columns by name, the source, and whether they came from
    a file or a DataFrame (bound by column names) rather than a dict of arrays (by data names)."""

    columns: dict
    source: str
    by_column: bool


def read_new(data, na=None) -> NewRows:
    """Read `data` (CSV or Parquet path, DataFrame, dict of arrays) once, for one or more bindings
    (`bind_new`: a grid posterior binds the same rows to every part's model)."""
    if isinstance(data, NewRows):
        return data
    columns, source = _table(data)
    tokens = na_tokens(na)
    return NewRows({k: _tokens_empty(v, tokens) for k, v in columns.items()}, source, not isinstance(data, dict))


def bind_new(model, data, levels: dict, group: str | None, na=None) -> NewData:
    """Bind `data` (CSV or Parquet path, DataFrame, dict of arrays, or `NewRows` already read) to
    `model` (a `ppl.Model`) with the training `levels` (data name → labels); `group`: the group
    column, or None."""
    checked = model.checked
    responses = [n for n in checked.data if checked.factors_of(n)]
    rows_read = read_new(data, na)
    table, source = dict(rows_read.columns), rows_read.source  # its entries are replaced below, not written
    observed = {}
    for name in responses:
        decl = checked.data[name]
        columns = _response_columns(decl, list(table), checked, source)
        rows = len(next(iter(table.values()))) if table else 0
        present = np.stack([~_missing(table[c]) if c in table else np.zeros(rows, bool) for c in columns], axis=1)
        fill = levels[name][0] if name in levels else PLACEHOLDER
        for i, column in enumerate(columns):
            cells = np.asarray(table.get(column, np.full(rows, None, dtype=object)), dtype=object).copy()
            cells[~present[:, i]] = fill
            table[column] = cells
        observed[name] = present if len(decl.type.dims) == 2 else present[:, 0]
    rows = len(next(iter(table.values()))) if table else 0
    for name in checked.data:  # an absent weight column: each new row is one observation
        if checked.variables[name].elem == "weight":
            for column in _response_columns(checked.data[name], list(table), checked, source):
                table.setdefault(column, np.ones(rows))
    if rows_read.by_column:  # columns by their names, as a file gives them
        import pandas as pd
        table = pd.DataFrame(table)
    dataset = model.bind(table, source=source)
    return _recode(checked, dataset, levels, group, observed)


def _table(data) -> tuple:
    """Columns by name (object arrays for text, float arrays for numbers) and the source name."""
    import pandas as pd
    if isinstance(data, dict):
        return {k: np.asarray(v) for k, v in data.items()}, "dict"
    if isinstance(data, (str, Path)):
        path = Path(data)
        if not path.is_file():
            raise DataError("E400", f"no data file at {path}", source=str(data))
        if path.suffix != ".parquet":
            return _read_csv(path, str(data)), str(data)
        frame, source = pd.read_parquet(path), str(data)
    else:
        frame, source = data, "DataFrame"
    return {str(c): frame[c].to_numpy(dtype=object) for c in frame.columns}, source


def _read_csv(path: Path, name: str) -> dict:
    """The new rows' text cells as `ppl infer` reads them (ppl.data.table: a short row is E402 at
    its line, a blank line a row of empty cells)."""
    return read_csv_text(path.read_bytes(), name).columns


def _tokens_empty(cells, tokens: tuple):
    """`cells` with None where a missing-value token is: a cell's text, or a number a token reads
    as (`-999.0` and -999 for "-999"), as `ppl infer` reads a numeric column. Unchanged when no
    cell is one."""
    import pandas as pd
    cells = np.asarray(cells)
    series = pd.Series(cells.reshape(-1).astype(object))
    text = series.astype(str).str.strip()
    numbers = token_numbers(tokens)
    empty = (text.isin(tokens) & series.notna()) | (pd.to_numeric(series, errors="coerce").isin(numbers)
                                                    if numbers else False)
    if not empty.any():
        return cells
    return np.where(empty.to_numpy(), None, series.to_numpy()).reshape(cells.shape)


def _missing(cells) -> np.ndarray:
    """Empty cells: None, NaN, or blank text (vectorised through pandas)."""
    import pandas as pd
    series = pd.Series(np.asarray(cells, dtype=object))
    return (series.isna() | (series.astype(str).str.strip() == "")).to_numpy()


def _response_columns(decl, available: list, checked, source: str) -> list:
    """The columns of a response: those the binding names, present or not (absent is held out)."""
    sizes = {k: v for k, v in checked.constants.items() if isinstance(v, int)}
    try:
        return _columns(decl, available, source, sizes)
    except DataError as error:
        binding = decl.binding
        if binding is None and len(decl.type.dims) == 1:
            return [decl.name]
        if hasattr(binding, "name"):
            return [binding.name]
        if hasattr(binding, "columns"):
            return [c.name for c in binding.columns]
        raise error


def _recode(checked, dataset: Dataset, levels: dict, group: str | None, observed: dict) -> NewData:
    """Training codes for every `cat` column, the groups present for the group column."""
    arrays, sizes, new_levels = dict(dataset.arrays), dict(dataset.sizes), dict(dataset.levels)
    labels, seen = [], np.zeros(0, dtype=np.int64)
    for name, found in dataset.levels.items():
        variable = checked.variables[name]
        codes = np.asarray(arrays[name])
        trained = {label: i for i, label in enumerate(levels.get(name, ()))}
        index = np.array([trained.get(label, -1) for label in found], dtype=np.int64)
        if name == group:
            present = np.unique(codes)
            arrays[name] = np.searchsorted(present, codes).astype(np.int32)
            labels, seen = [found[i] for i in present.tolist()], index[present]
            new_levels[name] = labels
            if isinstance(variable.levels, str):
                sizes[variable.levels] = len(labels)
            continue
        given = observed.get(name, np.ones(codes.shape, dtype=bool))
        unseen = (index[codes] < 0) & given
        if unseen.any():
            row = tuple(int(i) for i in np.argwhere(unseen)[0])
            binding = checked.data[name].binding
            raise DataError("E350", f"`{found[codes[row]]}` is not a level of `{name}` in the training data "
                            f"({len(trained)} levels)", column=getattr(binding, "name", name), row=row[0] + 1,
                            source=dataset.source,
                            hint=f"a fitted model knows the levels it was trained on: {_few(levels[name])}")
        arrays[name] = np.maximum(index[codes], 0).astype(np.int32)
        new_levels[name] = list(levels[name])
        if isinstance(variable.levels, str):
            sizes[variable.levels] = len(levels[name])
    return NewData(replace(dataset, arrays=arrays, masks={}, sizes=sizes, levels=new_levels),
                   observed, labels, seen)


def _few(labels: list) -> str:
    shown = ", ".join(map(str, labels[:8]))
    return shown + (f", ... ({len(labels)} in all)" if len(labels) > 8 else "")
