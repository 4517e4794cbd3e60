"""What `predict` and `score` return: tables of the predictive and of the fitted locals, and the
log predictive densities by cell, by row and in total."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ppl.infer.marginals import FamilyMarginal

COLUMNS = ("variable", "kind", "mean", "sd", "q2.5", "q97.5")


def local_marginals(fold) -> dict:
    """q of every local variable of the new data after the fold-in, by name."""
    problem, state = fold.problem, fold.state
    return {name: FamilyMarginal(problem.families[name],
                                 state.natural[name].reshape(problem.shapes[name] + (-1,)))
            for name in fold.plan.locals if name in problem.model.variables}


@dataclass
class Prediction:
    """`cells`: response → {mean, sd, q2.5, q97.5} arrays shaped like the response (NaN where the
    new data gave the cell), for a categorical response `probs`, P(y = k) per cell and class
    (shape + (K,)), and for a weighted response (`data count: weight[N]`) `count`, the
    observations a cell stands for, each with the cell's predictive; `locals`: the fitted q of
    the new rows' local variables; the groups of the new data (labels; `seen`: training index,
    −1 for a new group); `levels`: a `cat` response's labels, by name."""

    cells: dict
    locals: dict
    group_labels: list
    seen: np.ndarray
    group_dim: str
    plates: dict  # variable -> plate names (for labels)
    source: str
    levels: dict = field(default_factory=dict)

    def __getitem__(self, name: str):
        """A response's predictive as a DataFrame (one row per cell, NaN where given; a vector
        response's cells indexed by (row, coordinate), 0-based as in `cells`; a categorical one's
        most probable class `mode` and a `p[label]` column per class), or a local's q."""
        if name in self.locals:
            return self.locals[name]
        import pandas as pd
        cell = self.cells[name]
        shape = cell["mean"].shape
        index = pd.MultiIndex.from_product([range(n) for n in shape]) if len(shape) > 1 else None
        columns = {k: v.reshape(-1) for k, v in cell.items() if k != "probs"}
        return pd.DataFrame({**columns, **self._classes(name, np.ones(shape, dtype=bool))}, index=index)

    def _classes(self, name: str, at: np.ndarray) -> dict:
        """A categorical response's `mode` (None where the cell was given) and `p[label]` columns
        at the cells `at` (a mask); {} for other responses."""
        probs = self.cells[name].get("probs")
        if probs is None:
            return {}
        probs = probs[at]
        labels = [str(label) for label in self.levels.get(name, range(1, probs.shape[-1] + 1))]
        given = np.isnan(probs).any(axis=-1)
        mode = [None if g else labels[k] for g, k in zip(given, np.argmax(np.nan_to_num(probs), axis=-1))]
        return {"mode": mode, **{f"p[{label}]": probs[:, k] for k, label in enumerate(labels)}}

    def table(self):
        """One row per predicted cell and per element of a local (a DataFrame): `variable` labels
        use the group labels on the group axis (`theta[doc_7]`) and 1-based rows elsewhere; a
        categorical response's rows add its `mode` and `p[label]` columns."""
        import pandas as pd
        blocks = []
        for name, cell in self.cells.items():
            predicted = ~np.isnan(cell["mean"])
            index = np.argwhere(predicted)
            block = {"variable": self._labels(name, index), "kind": ["predictive"] * len(index)}
            block.update({column: cell[column][predicted] for column in COLUMNS[2:] + ("count",) if column in cell})
            blocks.append(pd.DataFrame({**block, **self._classes(name, predicted)}))
        for name, q in self.locals.items():
            mean, sd = np.asarray(q.mean, dtype=float), np.asarray(q.sd, dtype=float)
            quantiles = np.asarray(q.quantiles((0.025, 0.975)), dtype=float)
            if quantiles.shape[1:] != mean.shape:
                quantiles = np.full((2,) + mean.shape, np.nan)
            index = np.argwhere(np.ones(mean.shape, dtype=bool))
            block = {"variable": self._labels(name, index), "kind": [q.name] * len(index)}
            block.update(zip(COLUMNS[2:], (v.reshape(-1) for v in (mean, sd, quantiles[0], quantiles[1]))))
            blocks.append(pd.DataFrame(block))
        blocks = [b for b in blocks if len(b)]
        return pd.concat(blocks, ignore_index=True) if blocks else pd.DataFrame(columns=list(COLUMNS))

    def _labels(self, name: str, index: np.ndarray) -> list:
        from ppl.infer.posterior import _labels
        plates = self.plates.get(name, ())
        if not self.group_labels or not plates or plates[0] != self.group_dim:
            return _labels(name, index)
        return [f"{name}[{','.join([str(self.group_labels[row[0]])] + [str(i + 1) for i in row[1:]])}]"
                for row in index.tolist()]

    def to_csv(self, path) -> None:
        """The `table` as CSV, written atomically."""
        from ppl.report.outputs import write_atomic
        write_atomic(path, self.table().to_csv(index=False, float_format="%.10g"))


@dataclass
class Score:
    """log p(y | training data) per response cell (NaN where the new data leave it empty); a
    cell of a weighted row (`data count: weight[N]`) holds count × log p, and `counts` how many
    observations each observed cell stands for."""

    cells: dict
    source: str
    counts: dict = field(default_factory=dict)

    @property
    def rows(self) -> np.ndarray:
        """Per row of the new data: the sum over its observed response cells."""
        total = 0.0
        for values in self.cells.values():
            total = total + np.nansum(values.reshape(values.shape[0], -1), axis=1)
        return np.asarray(total, dtype=float)

    @property
    def total(self) -> float:
        return float(sum(np.nansum(v) for v in self.cells.values()))

    @property
    def count(self) -> int | float:
        """Observations scored: the observed cells, each counted by its row weight."""
        total = float(sum(np.nansum(self.counts[n]) if n in self.counts else np.sum(~np.isnan(v))
                          for n, v in self.cells.items()))
        return int(total) if total.is_integer() else total

    def frame(self):
        """One row per data row: `row` (1-based) and `lpd`."""
        import pandas as pd
        return pd.DataFrame({"row": np.arange(1, len(self.rows) + 1), "lpd": self.rows})

    def __repr__(self) -> str:
        return f"Score(total={self.total:.6f}, cells={self.count}, rows={len(self.rows)})"
