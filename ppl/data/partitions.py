"""Partitioned data: a glob of CSV or Parquet files, a folder of Parquet files or a Dask DataFrame,
read one partition at a time where the partition lives (a Dask worker), with `bind`'s checks and
messages.

One pass: `read_partition` converts and checks a partition's columns and keeps its `cat` columns
as codes into the partition's own labels; `merge` (on the client, from the small `Summary` of
each partition) joins the labels into the levels `bind` would find for all the rows, numbers the
groups, and refuses a group split across partitions (E360); `bind_partition` recodes a partition
to those levels, its groups numbered 0.. in the order of their global codes. Nothing here
imports Dask: the functions run as its tasks.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ppl.data.binding import (Dataset, _bind_sizes, _categories, _convert, _head, column_kinds,
                              covariate_has_no_missing, filled_rows, plan_columns)
from ppl.data.columns import Coded, na_tokens
from ppl.data.reading import open_data
from ppl.data.support import check_support
from ppl.diagnostics import DataError

PARQUET = (".parquet", ".pq")


def is_dask_frame(data) -> bool:
    """A Dask DataFrame, recognised without importing Dask."""
    return type(data).__module__.startswith("dask") and hasattr(data, "to_delayed")


def is_partitioned(data) -> bool:
    """Data a cluster reads by partitions: a Dask DataFrame, a glob pattern or a folder."""
    if is_dask_frame(data):
        return True
    return isinstance(data, (str, Path)) and (any(c in str(data) for c in "*?[") or Path(data).is_dir())


def partition_files(data) -> list[str]:
    """The files of a glob pattern or of a folder of Parquet files (sorted: the partitions'
    order is the rows' order), or the one file named."""
    text = str(data)
    if Path(text).is_dir():
        files = sorted(str(p) for p in Path(text).iterdir() if p.suffix.lower() in PARQUET)
    elif any(c in text for c in "*?["):
        files = sorted(glob.glob(text))
    else:
        files = [text]
    if not files:
        what = f"no .parquet file in the folder {text}" if Path(text).is_dir() else f"no data file matches {text}"
        raise DataError("E361", what, source=text,
                        hint="a pattern such as 'data/*.csv' or a folder of .parquet files")
    return files


@dataclass
class Part:
    """One partition read and checked: arrays of its numeric data, masks, and its `cat` columns
    as (codes into its own sorted labels, columns); `rows` after trailing blank rows."""

    name: str
    rows: int
    arrays: dict
    masks: dict
    coded: dict
    sizes: dict
    notes: tuple = ()


@dataclass(frozen=True)
class Summary:
    """What the client learns of a partition in the pass: its rows, labels and sizes."""

    rows: int
    labels: dict
    sizes: dict


def read_partition(model, data, name: str, na=None) -> Part:
    """Read one partition (a path or a pandas DataFrame) as `bind` reads a file; rows counted
    from the partition's start (the client moves them for a DataFrame's later partitions)."""
    reader = open_data(data, name, na_tokens(na))
    plan = plan_columns(model, reader)
    kinds = column_kinds(model, plan)
    if hasattr(reader, "frame") and not len(reader.frame):
        return Part(reader.name, 0, {}, {}, {}, {})
    found = reader.read(plan, kinds)
    rows = filled_rows(found, reader.name)
    arrays, masks, coded, sizes = {}, {}, {}, {}
    row_dims = {v.shape[0] for v in map(model.variables.get, model.data) if v.shape}  # counted by `merge`
    for decl in model.data.values():
        variable, columns = model.variables[decl.name], plan[decl.name]
        raw = _head(found[decl.name], rows)
        if variable.elem == "cat":
            stacked = Coded.stack([c if isinstance(c, Coded) else Coded.of_cells(c, ()) for c in raw], ())
            coded[decl.name] = (stacked, columns)
            shape = stacked.codes.shape if len(variable.shape) == 2 else stacked.codes.shape[:1]
            _bind_sizes(decl, variable.shape, shape, None, None, sizes, reader.name)
            mask = ~stacked.missing if stacked.missing.any() else None
        else:
            values, mask, _ = _convert(raw, decl, variable, columns, reader.name)
            _bind_sizes(decl, variable.shape, values.shape, None, None, sizes, reader.name)
            arrays[decl.name] = values if values.ndim == len(variable.shape) else values[:, 0]
        if mask is not None:
            covariate_has_no_missing(model, decl.name, mask, columns, reader.name)
            masks[decl.name] = mask if mask.ndim == len(variable.shape) else mask[:, 0]
    check_support(model, Dataset(arrays, {n: m for n, m in masks.items() if n in arrays}, sizes, {}, reader.name))
    sizes = {d: v for d, v in sizes.items() if d not in row_dims}
    unused = [c for c in reader.columns if c not in kinds]
    notes = (f"columns not used by the model: {', '.join(unused)}",) if unused else ()
    return Part(reader.name, rows, arrays, masks, coded, sizes, notes)


def summarise(part: Part) -> Summary:
    return Summary(part.rows, {n: c.labels for n, (c, _) in part.coded.items()}, part.sizes)


@dataclass
class Layout:
    """The partitions as one data set: levels of every `cat` name, for each partition the global
    code of each of its labels (`recode`) and the global codes of its groups (sorted), sizes."""

    names: list
    rows: np.ndarray
    levels: dict
    recode: dict  # cat name -> [array per partition: own label index -> global code]
    sizes: dict
    group: str | None
    groups: list = field(default_factory=list)  # per partition: global group codes, sorted

    def only(self, index: int) -> "Layout":
        """The layout as partition `index` needs it (its entries at index 0)."""
        return Layout([self.names[index]], self.rows[index:index + 1], self.levels,
                      {n: [r[index]] for n, r in self.recode.items()}, self.sizes, self.group, [self.groups[index]])

    @property
    def offsets(self) -> np.ndarray:
        """First row (0-based) of each partition."""
        return np.concatenate([[0], np.cumsum(self.rows)[:-1]]).astype(np.int64)


def merge(model, summaries: list, names: list, group: str | None, source: str) -> Layout:
    """The layout of the partitions from their summaries, with `bind`'s level and size checks
    (their errors carry no row: `first_bad_row` finds it) and E360/E362 of its own."""
    rows = np.array([s.rows for s in summaries], dtype=np.int64)
    if not rows.sum():
        raise DataError("E401", "the data file has a header but no rows", source=source)
    sizes = {k: v for k, v in model.constants.items() if isinstance(v, int)}
    for summary, name in zip(summaries, names):
        for dim, value in summary.sizes.items():
            if sizes.setdefault(dim, value) != value:
                raise DataError("E362", f"size `{dim}` is {sizes[dim]} in the partitions before {name} but {value} "
                                "there", source=name, hint="every partition must have the same columns")
    levels, recode = {}, {}
    for name, decl in ((n, d) for n, d in model.data.items() if model.variables[n].elem == "cat"):
        variable = model.variables[name]
        union = np.unique(np.concatenate([s.labels[name].astype(str) for s in summaries]))
        coded = Coded(np.arange(len(union), dtype=np.int32)[:, None], union.astype(object))
        try:
            codes, _, labels = _categories(coded, decl, variable, [name], source)
        except DataError as error:  # its row is one of the labels': `first_bad_row` finds the data's
            error.row = None
            raise
        _bind_sizes(decl, variable.shape[:1], (int(rows.sum()),), variable.levels, labels, sizes, source)
        levels[name] = labels
        recode[name] = [codes[np.searchsorted(union, s.labels[name].astype(str)), 0] for s in summaries]
    row_dim = model.variables[group or next(iter(model.data))].shape[0]
    if isinstance(row_dim, str):
        sizes[row_dim] = int(rows.sum())
    layout = Layout(list(names), rows, levels, recode, sizes, group)
    if group is None:
        layout.groups = [np.arange(o, o + r) for o, r in zip(layout.offsets, rows)]
    else:
        layout.groups = [np.sort(codes) for codes in recode[group]]
        _no_split_group(layout, group)
    return layout


def _no_split_group(layout: Layout, group: str) -> None:
    """E360 at the first group whose rows are in two partitions."""
    owner = np.concatenate([np.full(len(g), i) for i, g in enumerate(layout.groups)])
    codes = np.concatenate(layout.groups)
    order = np.argsort(codes, kind="stable")
    twice = np.flatnonzero(codes[order][1:] == codes[order][:-1])
    if twice.size:
        first, second = owner[order][twice[0]], owner[order][twice[0] + 1]
        label = layout.levels[group][codes[order][twice[0]]]
        raise DataError("E360", f"group `{group}` = {label} has rows in two partitions ({layout.names[first]} and "
                        f"{layout.names[second]}): a group is never split across partitions", column=group,
                        source=layout.names[second],
                        hint=f"sort the rows by `{group}` before partitioning (Dask: ddf.set_index('{group}') "
                             f"or ddf.shuffle('{group}'); files: one file per range of `{group}`)")


def first_bad_row(model, part: Part, name: str, source: str):
    """The error `_categories` raises on one partition's own codes (with its row), or None."""
    coded, columns = part.coded[name]
    try:
        _categories(coded, model.data[name], model.variables[name], columns, source)
    except DataError as error:
        return error
    return None


def bind_partition(model, part: Part, layout: Layout, index: int) -> Dataset:
    """Partition `index` as a `Dataset` in the levels of all the data; its groups are numbered
    0.. in the order of their global codes (`layout.groups[index]`)."""
    arrays, masks = dict(part.arrays), dict(part.masks)
    levels, sizes = dict(layout.levels), {**layout.sizes, **part.sizes}
    for name, (coded, _) in part.coded.items():
        table = np.append(layout.recode[name][index], 0).astype(np.int32)  # missing (-1) reads 0
        codes = table[coded.codes]
        arrays[name] = codes if len(model.variables[name].shape) == 2 else codes[:, 0]
    row_dim = model.variables[layout.group or next(iter(model.data))].shape[0]
    if isinstance(row_dim, str):
        sizes[row_dim] = part.rows
    if layout.group is not None:
        own = layout.groups[index]
        arrays[layout.group] = np.searchsorted(own, arrays[layout.group]).astype(np.int32)
        levels[layout.group] = [layout.levels[layout.group][i] for i in own.tolist()]
        dim = model.variables[layout.group].levels
        if isinstance(dim, str):
            sizes[dim] = len(own)
    dataset = Dataset(arrays, masks, sizes, levels, part.name, part.notes)
    check_support(model, dataset)
    return dataset


def concat_groups(model, datasets: list, group: str | None) -> Dataset:
    """Datasets of disjoint groups (as `GroupedSource.take` gives them) as one, groups numbered
    one dataset after the other."""
    first = datasets[0]
    row_dim = model.variables[group or next(iter(model.data))].shape[0]
    per_row = [n for n in first.arrays if model.variables[n].shape[:1] == (row_dim,)]
    arrays = {n: (np.concatenate([d.arrays[n] for d in datasets]) if n in per_row else v) for n, v in first.arrays.items()}
    masked = set().union(*(d.masks for d in datasets))
    masks = {n: np.concatenate([d.masks.get(n, np.ones(np.shape(d.arrays[n]), bool)) for d in datasets])
             for n in masked}
    sizes, levels = dict(first.sizes), dict(first.levels)
    if isinstance(row_dim, str):
        sizes[row_dim] = len(arrays[per_row[0]])
    if group is not None:
        counts = [len(d.levels[group]) for d in datasets]
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        arrays[group] = np.concatenate([d.arrays[group] + s for d, s in zip(datasets, start)]).astype(np.int32)
        levels[group] = [label for d in datasets for label in d.levels[group]]
        dim = model.variables[group].levels
        if isinstance(dim, str):
            sizes[dim] = int(sum(counts))
    return Dataset(arrays, masks, sizes, levels, first.source, first.notes)
