"""Groups of rows of bound data: the documents, sequences or hierarchy groups a schedule visits.

`Groups.take(b)` is the `Dataset` of the rows of groups `b`, as `bind` would return it for a
file holding only those rows, except that every categorical column keeps its full levels (the
vocabulary stays the vocabulary) and the group column is recoded 1..|b| in the order given.
"""

from __future__ import annotations

import numpy as np

from ppl.data.binding import Dataset


class Groups:
    """The groups of an in-memory `Dataset`: by the codes of the cat column `group`, or one group
    per row when `group` is None."""

    def __init__(self, model, dataset: Dataset, group: str | None, row_dim: str, group_dim: str):
        self.model, self.dataset, self.group = model, dataset, group
        self.row_dim, self.group_dim = row_dim, group_dim
        rows = int(dataset.sizes[row_dim])
        if group is None:
            self.order = np.arange(rows)
            self.group_sizes = np.ones(rows, dtype=np.int64)
        else:
            codes = np.asarray(dataset.arrays[group]).reshape(-1)
            self.order = np.argsort(codes, kind="stable")
            self.group_sizes = np.bincount(codes, minlength=int(dataset.sizes[group_dim]))
        self.offsets = np.concatenate([[0], np.cumsum(self.group_sizes)])

    @property
    def groups(self) -> int:
        return len(self.group_sizes)

    def rows_of(self, groups: np.ndarray) -> np.ndarray:
        """Row numbers of `groups`, group by group, in file order within a group."""
        counts = self.group_sizes[groups]
        starts = np.repeat(self.offsets[groups] - np.cumsum(counts) + counts, counts)
        return self.order[starts + np.arange(counts.sum())]

    def take(self, groups) -> Dataset:
        groups = np.asarray(groups, dtype=np.int64)
        rows = self.rows_of(groups)
        data = self.dataset
        per_row = {n for n in data.arrays if self.model.variables[n].shape[:1] == (self.row_dim,)}
        arrays = {n: (a[rows] if n in per_row else a) for n, a in data.arrays.items()}
        masks = {n: (m[rows] if n in per_row else m) for n, m in data.masks.items()}
        sizes = dict(data.sizes, **{self.row_dim: len(rows)})
        levels = dict(data.levels)
        if self.group is not None:
            recode = np.empty(self.groups, dtype=np.int64)
            recode[groups] = np.arange(len(groups))
            arrays[self.group] = recode[arrays[self.group]]
            sizes[self.group_dim] = len(groups)
            levels[self.group] = [data.levels[self.group][g] for g in groups.tolist()]
        return Dataset(arrays, masks, sizes, levels, data.source)
