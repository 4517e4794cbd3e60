"""Streaming groups: one pass over a data file in chunks records what `bind` would (checked values,
levels, sizes) into memory-mapped columns on disk, and the rows of every group of a group plate;
`take(groups)` then gives the `Dataset` of those groups alone at a cost of their rows.

Memory: O(chunk) + O(labels) during the pass, O(|B|) + O(groups) afterwards (plus O(rows) only
to locate the row of a bad `cat` label, an error path).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path

import numpy as np

from ppl.data.binding import (Dataset, _bind_sizes, _categories, _convert, column_kinds,
                              covariate_has_no_missing, plan_columns)
from ppl.data.columns import Coded, LabelIndex, na_tokens
from ppl.data.reading import NUMERIC, open_data, typed_column, unreadable
from ppl.data.support import check_support
from ppl.data.table import locate_malformed
from ppl.diagnostics import DataError


BLOCK_ROWS = 1 << 20  # rows per block when codes are recoded or sorted by group after the pass


class GroupedSource:
    """The rows of a data set by group: `group` is the `cat` data name whose codes index the group
    plate (`doc` in models/lda.vim), or None for one group per row (a mixture)."""

    def __init__(self, model, arrays: dict, masks: dict, sizes: dict, levels: dict, source: str,
                 group: str | None, notes: tuple = (), directory: str | None = None):
        self.model, self.sizes, self.levels, self.source, self.notes = model, sizes, levels, source, notes
        self._arrays, self._masks, self.group = arrays, masks, group
        # the row dimension: the group column's, or the first data declaration's
        self.row_dim = model.variables[group or next(iter(model.data))].shape[0]
        self._per_row = [n for n in arrays if model.variables[n].shape[:1] == (self.row_dim,)]
        self.rows = len(arrays[self._per_row[0]]) if self._per_row else 0
        if group is None:
            self.group_dim, self.groups = self.row_dim, self.rows
            self.group_sizes = np.broadcast_to(np.int64(1), (self.rows,))  # O(1) memory
            self._order = None
        else:
            self.group_dim, self.groups = _group_variable(model, group).levels, len(levels[group])
            self._order, self.group_sizes = _group_rows(arrays[group], self.groups, directory)
            self._offsets = np.concatenate([[0], np.cumsum(self.group_sizes)])
        self._finalizer = weakref.finalize(self, shutil.rmtree, directory, True) if directory else None

    @classmethod
    def from_dataset(cls, model, dataset: Dataset, group: str | None) -> "GroupedSource":
        """The same interface over data bound in memory (`bind`'s result)."""
        checked = getattr(model, "checked", model)
        return cls(checked, dict(dataset.arrays), dict(dataset.masks), dict(dataset.sizes),
                   dict(dataset.levels), dataset.source, group, dataset.notes)

    @classmethod
    def open(cls, model, path, group: str | None, chunk_rows: int = 20_000, na=None) -> "GroupedSource":
        """One pass over a CSV or Parquet file in chunks of about `chunk_rows` rows."""
        checked = getattr(model, "checked", model)
        if group is not None:
            _group_variable(checked, group)  # before the pass, not after
        directory = tempfile.mkdtemp(prefix="ppl-stream-")
        try:
            arrays, masks, sizes, levels, name, notes = _Pass(checked, path, na_tokens(na), directory).run(chunk_rows)
            return cls(checked, arrays, masks, sizes, levels, name, group, notes, directory)
        except BaseException:
            shutil.rmtree(directory, True)
            raise

    def take(self, group_indices) -> Dataset:
        """The `Dataset` of the rows of these groups (0-based, any order, no duplicates): the
        group column is recoded 1..|B| in the order given, every other `cat` column keeps the
        full data's levels; rows in group order, then file order."""
        chosen = np.asarray(group_indices, dtype=np.int64).reshape(-1)
        counts = self.group_sizes[chosen]
        if self._order is None:
            rows = chosen
        else:
            starts = np.repeat(self._offsets[chosen] - np.cumsum(counts) + counts, counts)
            rows = np.asarray(self._order[starts + np.arange(int(counts.sum()))])
        arrays = {n: np.asarray(v[rows] if n in self._per_row else v) for n, v in self._arrays.items()}
        masks = {n: m for n, m in ((n, np.asarray(v[rows] if n in self._per_row else v))
                                   for n, v in self._masks.items()) if not m.all()}
        sizes = {**self.sizes, **({self.row_dim: len(rows)} if isinstance(self.row_dim, str) else {})}
        levels = dict(self.levels)
        if self.group is not None:
            arrays[self.group] = np.repeat(np.arange(len(chosen), dtype=np.int32), counts)
            levels[self.group] = [self.levels[self.group][i] for i in chosen.tolist()]
            if isinstance(self.group_dim, str):
                sizes[self.group_dim] = len(chosen)
        return Dataset(arrays, masks, sizes, levels, self.source, self.notes)

    def close(self) -> None:
        """Remove the on-disk columns (also done when the source is collected)."""
        self._arrays, self._masks, self._order = {}, {}, None
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _group_variable(model, group: str):
    variable = model.variables.get(group)
    if variable is None or variable.kind != "data" or variable.elem != "cat" or len(variable.shape) != 1:
        raise ValueError(f"the group `{group}` must be a one-dimensional `cat` data name")
    return variable


def _group_rows(codes, groups: int, directory: str | None):
    """(row numbers sorted by group, stable, rows per group) by a counting sort over blocks of
    rows, so that only O(block + groups) is in memory; on disk when `directory` is given."""
    sizes, block = np.zeros(groups, dtype=np.int64), BLOCK_ROWS
    for start in range(0, len(codes), block):
        sizes += np.bincount(codes[start:start + block], minlength=groups)
    order = (np.memmap(os.path.join(directory, "order.i8"), np.int64, "w+", shape=(len(codes),))
             if directory and len(codes) else np.empty(len(codes), dtype=np.int64))
    cursor = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for start in range(0, len(codes), block):
        chunk = np.asarray(codes[start:start + block])
        by_group = np.argsort(chunk, kind="stable")
        sorted_codes = chunk[by_group]
        within = np.arange(len(chunk)) - np.searchsorted(sorted_codes, sorted_codes, "left")
        order[cursor[sorted_codes] + within] = start + by_group
        cursor += np.bincount(chunk, minlength=groups)
    return order, sizes


class _Pass:
    """The pass over a file: every chunk converted and checked as `bind` does (rows numbered in
    the file), appended to one file per data name; `cat` labels gathered, codes sorted at the end."""

    def __init__(self, model, path, na: tuple, directory: str):
        self.model, self.na, self.directory = model, na, directory
        self.reader = open_data(path, None, na)
        self.name = self.reader.name
        self.plan = plan_columns(model, self.reader)
        self.kinds = column_kinds(model, self.plan)

    def run(self, chunk_rows: int):
        import pyarrow as pa

        text = pa.dictionary(pa.int32(), pa.string())
        types = {c: pa.float64() if kind in NUMERIC else text for c, kind in self.kinds.items()}
        while True:
            try:
                return self._run(types, chunk_rows)
            except pa.ArrowInvalid as exc:  # a column that is not all numbers: read it as text
                column = _column_of(exc, self.reader.columns)
                if column not in types or types[column] == text:
                    if hasattr(self.reader, "options"):
                        locate_malformed(self.reader.path, self.name)
                    raise DataError("E402", f"malformed data file: {exc}", source=self.name) from None
                types[column] = text

    def _run(self, types: dict, chunk_rows: int):
        self.rows, self.pending, self.missing = 0, 0, set()
        self.labels = {d: LabelIndex() for d in self.plan if self.model.variables[d].elem == "cat"}
        self.files = {d: open(self._path(d, "values"), "wb") for d in self.plan}
        self.mask_files = {d: open(self._path(d, "mask"), "wb") for d in self.plan}
        try:
            for table in self._chunks(types, chunk_rows):
                self._chunk(table)
        finally:
            for handle in [*self.files.values(), *self.mask_files.values()]:
                handle.close()
        if not self.rows:
            raise DataError("E401", "the data file has a header but no rows", source=self.name)
        return self._finish()

    def _chunks(self, types: dict, chunk_rows: int):
        """Tables of columns ({column: float64 or Coded}) of about `chunk_rows` rows each."""
        if not hasattr(self.reader, "options"):  # Parquet: by row groups
            for batch in self.reader.file.iter_batches(batch_size=chunk_rows, columns=list(types)):
                yield {c: typed_column(_chunked(batch.column(c)), self.na) for c in types}
            return
        import pyarrow.csv as pacsv

        width = _line_width(self.reader.path)
        try:
            stream = pacsv.open_csv(self.reader.path, **self.reader.options(types, max(chunk_rows * width, 1 << 12)))
        except OSError as exc:
            raise unreadable(exc, self.name) from None
        for batch in stream:
            yield {c: typed_column(_chunked(batch.column(c)), self.na) for c in types}

    def _chunk(self, table: dict) -> None:
        present = np.zeros(len(next(iter(table.values()))), dtype=bool)
        for values in table.values():
            present |= ~(values.missing if isinstance(values, Coded) else np.isnan(values))
        filled = np.flatnonzero(present)
        if not filled.size:  # blank rows count only if a filled row follows them
            self.pending += len(present)
            return
        if self.pending:
            self._rows({c: _blank(self.pending, k in NUMERIC) for c, k in self.kinds.items()})
        self._rows({c: _cut(v, filled[-1] + 1) for c, v in table.items()})
        self.pending = len(present) - filled[-1] - 1

    def _rows(self, table: dict) -> None:
        """Convert, check and append rows that follow `self.rows` rows of the file."""
        offset, chunk, chunk_masks = self.rows, {}, {}
        try:
            for name, columns in self.plan.items():
                variable, raw = self.model.variables[name], [table[c] for c in columns]
                if variable.elem == "cat":
                    values, mask = self._provisional(name, raw)
                else:
                    values, mask, _ = _convert(raw, self.model.data[name], variable, columns, self.name)
                    chunk[name] = values if values.ndim == len(variable.shape) else values[:, 0]
                    mask = mask if mask is None or mask.ndim == len(variable.shape) else mask[:, 0]
                if mask is not None:
                    covariate_has_no_missing(self.model, name, mask, columns, self.name)
                    self.missing.add(name)
                    chunk_masks[name] = mask
                observed = np.ones(values.shape, bool) if mask is None else mask
                values.tofile(self.files[name])
                observed.tofile(self.mask_files[name])
            check_support(self.model, Dataset(chunk, chunk_masks, _constants(self.model), {}, self.name))
        except DataError as error:
            raise _moved(error, offset) from None
        self.rows += len(next(iter(table.values())))

    def _provisional(self, name: str, raw: list):
        """Codes into the labels seen so far (in order of appearance), -1 where missing."""
        coded = Coded.stack([c if isinstance(c, Coded) else Coded.of_cells(c, ()) for c in raw], ())
        codes = self.labels[name].codes(coded.labels.tolist(), coded.codes)
        mask = ~coded.missing if coded.missing.any() else None
        if len(self.model.variables[name].shape) == 1:
            return codes[:, 0], None if mask is None else mask[:, 0]
        return codes, mask

    def _finish(self):
        arrays, masks, sizes, levels = {}, {}, _constants(self.model), {}
        for name, columns in self.plan.items():
            variable = self.model.variables[name]
            width = len(columns) if len(variable.shape) == 2 else None
            shape = (self.rows, width) if width else (self.rows,)
            kind = variable.elem
            dtype = np.float64 if kind in ("real", "weight") else np.int32 if kind == "cat" else np.int64
            values = np.memmap(self._path(name, "values"), dtype, "r+", shape=shape)
            labels = None
            if kind == "cat":
                labels = levels[name] = self._recode(name, values, columns)
            _bind_sizes(self.model.data[name], variable.shape, values.shape if width else (self.rows, 1),
                        variable.levels, labels, sizes, self.name)
            arrays[name] = values
            if name in self.missing:
                masks[name] = np.memmap(self._path(name, "mask"), bool, "r", shape=shape)
        cats = {n: a for n, a in arrays.items() if n in levels}
        check_support(self.model, Dataset(cats, {n: m for n, m in masks.items() if n in cats}, sizes, levels, self.name))
        unused = [c for c in self.reader.columns if c not in self.kinds]
        notes = (f"columns not used by the model: {', '.join(unused)}",) if unused else ()
        return arrays, masks, sizes, levels, self.name, notes

    def _recode(self, name: str, values: np.memmap, columns: list) -> list:
        """Codes of the labels seen (in order of appearance) → `bind`'s codes, block by block: the
        labels are converted once each; a bad one is located by the exact path over every row."""
        index, decl, variable = self.labels[name], self.model.data[name], self.model.variables[name]
        seen = np.arange(len(index.seen), dtype=np.int32)[:, None]
        try:
            recode, _, labels = _categories(index.coded(seen, ()), decl, variable, columns, self.name)
        except DataError:  # the same check over the rows, for the row of the first bad cell
            _categories(index.coded(values.reshape(self.rows, -1), ()), decl, variable, columns, self.name)
            raise
        recode = np.append(recode.ravel(), 0).astype(np.int32)  # a missing cell (-1) reads 0
        flat = values.reshape(-1)
        for start in range(0, len(flat), BLOCK_ROWS):
            flat[start:start + BLOCK_ROWS] = recode[flat[start:start + BLOCK_ROWS]]
        values.flush()
        return labels

    def _path(self, name: str, what: str) -> str:
        return os.path.join(self.directory, f"{name}.{what}")


def _column_of(exc, columns: list[str]):
    import re
    found = re.search(r"column #(\d+)", str(exc))
    return columns[int(found.group(1))] if found else None


def _chunked(array):
    import pyarrow as pa
    return pa.chunked_array([array])


def _line_width(path: Path, sample: int = 1 << 16) -> int:
    """Bytes per line in the first `sample` bytes (to turn rows per chunk into bytes per block)."""
    with open(path, "rb") as handle:
        head = handle.read(sample)
    return max(len(head) // max(head.count(b"\n"), 1), 1)


def _blank(rows: int, numeric: bool):
    return np.full(rows, np.nan) if numeric else Coded(np.full(rows, -1, np.int32), np.zeros(0, object))


def _cut(values, rows: int):
    return Coded(values.codes[:rows], values.labels) if isinstance(values, Coded) else values[:rows]


def _constants(model) -> dict:
    return {k: v for k, v in model.constants.items() if isinstance(v, int)}


def _moved(error: DataError, offset: int) -> DataError:
    """The same error with its row counted from the start of the file."""
    return DataError(error.code, error.message, column=error.column, source=error.source_name,
                     row=None if error.row is None else error.row + offset, hint=error.hint,
                     expected=error.expected, span=error.span)
