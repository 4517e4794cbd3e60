"""Text columns as integer codes: the one representation of text cells between the readers and
the converter. A column of N cells with L distinct texts costs N int32 codes and L strings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# pandas' default missing-value tokens (pandas.read_csv `na_values`): these cells are missing,
# like an empty one. `--na TOKEN` / `na=[...]` add others.
NA_TOKENS = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
             "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")


def na_tokens(extra=None) -> tuple[str, ...]:
    """The missing-value tokens: pandas' defaults plus `extra` (a token or a list of them)."""
    if extra is None:
        return NA_TOKENS
    return NA_TOKENS + ((str(extra),) if isinstance(extra, (str, int, float)) else tuple(str(t) for t in extra))


def numeric_missing(values: np.ndarray, na: tuple) -> np.ndarray:
    """A numeric column of a DataFrame or dict (no cell texts) with NaN where a missing-value
    token reads as the cell's number (`na=["-999"]` marks -999.0); pandas' tokens are all text."""
    numbers = token_numbers(na)
    return np.where(np.isin(values, numbers), np.nan, values) if numbers else values


def token_numbers(na: tuple) -> list:
    """The finite numbers that missing-value tokens read as (`-999` for "-999"); pandas' defaults'
    (none) worked out once, not a dozen caught exceptions for every column bound."""
    return list(_DEFAULT_NUMBERS) if na is NA_TOKENS else _token_numbers(na)


def _token_numbers(na: tuple) -> list:
    numbers = []
    for token in na:
        try:
            numbers.append(float(token))
        except ValueError:
            continue
    return [v for v in numbers if np.isfinite(v)]


_DEFAULT_NUMBERS = tuple(_token_numbers(NA_TOKENS))


@dataclass(frozen=True)
class Coded:
    """A text column: `codes` (int32, -1 where missing) into `labels` (distinct texts, sorted)."""

    codes: np.ndarray
    labels: np.ndarray

    @staticmethod
    def of(codes: np.ndarray, labels, na: tuple) -> "Coded":
        """Normalised: leading spaces dropped (as `csv.reader(skipinitialspace=True)` does),
        missing-value tokens missing, equal texts merged, labels sorted (as `sorted` sorts)."""
        tokens = set(na)
        text = [str(label).lstrip(" ") for label in labels]
        keep = np.array([t not in tokens for t in text], dtype=bool)
        unique, inverse = np.unique(np.array(text, dtype=str)[keep], return_inverse=True)
        recode = np.full(len(text) + 1, -1, dtype=np.int32)  # the last entry maps -1 to -1
        recode[:-1][keep] = inverse
        return Coded(recode[codes], unique.astype(object))

    @staticmethod
    def of_cells(cells: np.ndarray, na: tuple) -> "Coded":
        """From an array of cells (text, numbers; None or NaN where missing)."""
        present = ~(np.equal(cells, None) | np.not_equal(cells, cells))
        if cells.dtype.kind in "fiub":
            unique, inverse = np.unique(cells[present], return_inverse=True)
            labels = [str(v) for v in unique.tolist()]
        else:
            unique, inverse = np.unique(cells[present].astype(str), return_inverse=True)
            labels = unique.tolist()
        codes = np.full(cells.shape, -1, dtype=np.int32)
        codes[present] = inverse
        return Coded.of(codes, labels, na)

    @staticmethod
    def stack(columns: list["Coded"], na: tuple) -> "Coded":
        """Several columns side by side (rows × columns) with one set of labels."""
        if len(columns) == 1:  # already normalised: a view, no copy
            return Coded(columns[0].codes[:, None], columns[0].labels)
        offsets = np.cumsum([0] + [len(c.labels) for c in columns])
        codes = np.stack([np.where(c.codes >= 0, c.codes + o, -1) for c, o in zip(columns, offsets)], axis=1)
        return Coded.of(codes.astype(np.int32), np.concatenate([c.labels for c in columns]), na)

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def missing(self) -> np.ndarray:
        return self.codes < 0

    def text(self, where) -> str:
        """The text of one (present) cell."""
        return self.labels[self.codes[where]]

    def first(self, bad_labels: np.ndarray) -> tuple:
        """The index (row-major) of the first cell whose label is flagged in `bad_labels`."""
        flags = np.append(bad_labels, False)  # code -1 (missing) reads the last entry
        return tuple(int(i) for i in np.argwhere(flags[self.codes])[0])


def dictionary_column(chunked, na: tuple) -> Coded:
    """A pyarrow dictionary-encoded (chunked) column as a `Coded` column."""
    chunked = chunked.unify_dictionaries() if chunked.num_chunks else chunked
    if chunked.num_chunks == 0:
        return Coded(np.zeros(0, np.int32), np.zeros(0, object))
    import pyarrow as pa

    labels = chunked.chunk(0).dictionary.to_pylist()
    # indices at their own width (pandas writes a `category` as int8), as int32
    codes = np.concatenate([arrow_values(c.indices.cast(pa.int32()), np.int32, -1) for c in chunked.chunks])
    return Coded.of(codes.astype(np.int32, copy=False), labels, na)


def arrow_values(array, dtype, missing) -> np.ndarray:
    """A pyarrow array of fixed-width values as numpy, `missing` where null, read from its
    buffers (pyarrow's `to_numpy` looks for pandas, a third of a second to import)."""
    validity, data = array.buffers()[:2]
    start, stop = array.offset, array.offset + len(array)
    values = np.frombuffer(data, dtype=dtype)[start:stop] if data is not None else np.zeros(0, dtype)
    if not array.null_count:
        return values
    valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[start:stop]
    return np.where(valid.astype(bool), values, missing)


class LabelIndex:
    """Labels in order of first appearance across chunks, so that chunks read apart share codes;
    `coded(codes)` sorts them at the end (`Coded.of`)."""

    def __init__(self):
        self.seen: dict = {}

    def codes(self, labels: list, codes: np.ndarray) -> np.ndarray:
        """`codes` into this chunk's `labels` → codes into every label seen so far (-1 stays)."""
        ids = [self.seen.setdefault(label, len(self.seen)) for label in labels]
        return np.array(ids + [-1], dtype=np.int32)[codes]

    def coded(self, codes: np.ndarray, na: tuple) -> Coded:
        return Coded.of(codes, list(self.seen), na)
