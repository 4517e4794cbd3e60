"""A large CSV file read by pyarrow's streaming reader straight into the arrays `bind` keeps:
one (rows × columns) float64 block per numeric declaration, int32 codes per text column. Peak
memory is those arrays and one block of the file; no whole-file Arrow table is ever held."""

from __future__ import annotations

import os

import numpy as np

from ppl.data.columns import LabelIndex, arrow_values

BLOCK = 1 << 22  # bytes of CSV text per block


class _Growing:
    """An array filled by rows, with room for `capacity` rows, grown by half when full (np.empty:
    rows never written take no memory)."""

    def __init__(self, capacity: int, width: int | None, dtype):
        self.array = np.empty((capacity, width) if width else capacity, dtype=dtype)

    def room(self, rows: int) -> np.ndarray:
        if rows > len(self.array):
            bigger = np.empty((max(rows, len(self.array) * 3 // 2),) + self.array.shape[1:], self.array.dtype)
            bigger[:len(self.array)] = self.array
            self.array = bigger
        return self.array


def read_blocks(reader, plan: dict, types: dict) -> dict:
    """{name: raw} for `bind`: a (rows × columns) float64 array when every column of a declaration
    is read as numbers, else a list of columns (float64, or `Coded` for text)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    capacity = _row_bound(reader.path, reader.header_lines)
    numeric = {c for c, t in types.items() if t == pa.float64()}
    blocks = {name: _Growing(capacity, len(columns), np.float64) for name, columns in plan.items()
              if set(columns) <= numeric}
    singles = {c: _Growing(capacity, None, np.float64 if c in numeric else np.int32)
               for name, columns in plan.items() if name not in blocks for c in columns}
    labels = {c: LabelIndex() for c in singles if c not in numeric}
    rows = 0
    for batch in pacsv.open_csv(reader.path, **reader.options(types, BLOCK)):
        end = rows + batch.num_rows
        for name, block in blocks.items():
            target = block.room(end)
            for j, column in enumerate(plan[name]):
                target[rows:end, j] = arrow_values(batch.column(column), np.float64, np.nan)
        for column, single in singles.items():
            values = batch.column(column)
            single.room(end)[rows:end] = (arrow_values(values, np.float64, np.nan) if column in numeric else
                                          labels[column].codes(values.dictionary.to_pylist(),
                                                               arrow_values(values.indices, np.int32, -1)))
        rows = end
    found = {name: block.array[:rows] for name, block in blocks.items()}
    for name, columns in plan.items():
        if name not in found:
            found[name] = [singles[c].array[:rows] if c in numeric else
                           labels[c].coded(singles[c].array[:rows], reader.na) for c in columns]
    return found


def _row_bound(path, header_lines: int, sample: int = 1 << 16) -> int:
    """More rows than the file is likely to hold: its size over the width of its first lines."""
    with open(path, "rb") as handle:
        head = handle.read(sample)
    width = max(len(head) // max(head.count(b"\n"), 1), 1)
    return int(os.path.getsize(path) / width * 1.25) + 1024 - header_lines
