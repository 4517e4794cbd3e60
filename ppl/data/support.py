"""Observed values must lie in the support of the distribution that draws them."""

from __future__ import annotations

import numpy as np

from ppl.diagnostics import DataError
from ppl.graph.forms import reads
from ppl.lang import ast
from ppl.lang.distributions import SUPPORTS

# support -> test that is True where a value is allowed
_TESTS = {
    "binary": lambda v: (v == 0) | (v == 1),  # np.isin's sort-based path costs ~50 us on a few values
    "count": lambda v: (v >= 0) & (v == np.round(v)),
    "counts": lambda v: (v >= 0) & (v == np.round(v)),
    "positive": lambda v: v > 0,
    "open_unit": lambda v: (v > 0) & (v < 1),
    "unit": lambda v: (v >= 0) & (v <= 1),
}


def check_support(model, dataset) -> None:
    """Raise a `DataError` naming the first observed value outside its distribution's support."""
    for factor in model.factors:
        name = factor.target.name
        if name not in dataset.arrays:
            continue
        values = dataset.arrays[name]
        observed = dataset.masks.get(name, np.ones(values.shape, dtype=bool))
        _check_imputable(factor, observed, model, dataset)
        _check_not_read(name, observed, model, dataset)
        support = factor.dist.value
        if support in ("category", "ordinal"):
            _check_categories(factor, values, observed, dataset, model)
            continue
        test = _TESTS.get(support)
        if test is None:
            continue
        bad = ~test(values) & observed
        if support == "count" and "trials" in factor.args:
            bad |= _above_trials(factor.args["trials"], values, dataset) & observed
        if bad.any():
            where = np.argwhere(bad)[0]
            decl = model.data[name]
            column = _column_name(decl, where)
            raise DataError("E420", f"{values[tuple(where)]} is outside the support of "
                            f"{factor.dist.name}: `{name}` must be {SUPPORTS[support]}",
                            column=column, row=int(where[0]) + 1, source=dataset.source)


def _check_categories(factor, values, observed, dataset, model) -> None:
    """A category drawn from `Categorical(probs)` with a known number of probabilities, or from
    `OrderedLogistic(eta, cut)` with a known number of cutpoints (one category more); an `int`
    column holds 1-based categories, a `cat` column 0-based codes."""
    if factor.dist.value == "ordinal":
        count = _known_length(factor.args["cut"], dataset, model)
        count = None if count is None else count + 1
        if model.variables[factor.target.name].elem != "cat":
            values = values - 1
    else:
        count = _known_length(factor.args["probs"], dataset, model)
    if count is None:
        return
    bad = ((values >= count) | (values < 0)) & observed
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        name = factor.target.name
        raise DataError("E421", f"category {values[row] + 1} of `{name}` is out of range "
                        f"1..{count}", column=name, row=row + 1, source=dataset.source)


def _known_length(expr, dataset, model):
    if isinstance(expr, ast.Call) and expr.func in ("ones", "zeros") and len(expr.args) == 1:
        arg = expr.args[0]
        if isinstance(arg, ast.Number):
            return int(arg.value)
        if isinstance(arg, ast.Name):
            return dataset.sizes.get(arg.id)
    if isinstance(expr, ast.Vector):
        return len(expr.items)
    if isinstance(expr, ast.Name) and expr.id in model.variables and model.variables[expr.id].kind == "const":
        shape = model.variables[expr.id].shape
        return shape[-1] if len(shape) == 1 and isinstance(shape[-1], int) else None
    return None


def _check_not_read(name: str, observed, model, dataset) -> None:
    """A response with missing cells that another statement reads (`x ~ Normal(0, 1)` and
    `y ~ Normal(b * x, 1)`, or a semi-supervised `z` in `mu[z[n]]`) is refused: the reader would
    take the empty cells' fill value as data and send the imputed cells no message, a silently
    wrong posterior. E418 names the first empty cell and the reader."""
    if observed.all():
        return
    reader = _reader_of(name, model)
    if reader is None:
        return
    where = np.argwhere(~observed)[0]
    raise DataError("E418", f"`{name}` has an empty cell and is read by `{reader}`: missing cells of a variable "
                    "that another statement reads are not imputed", column=_column_name(model.data[name], where),
                    row=int(where[0]) + 1, source=dataset.source,
                    hint="fill in the cell or drop the row; only a response that nothing else reads may have missing "
                    "values")


def _reader_of(name: str, model) -> str | None:
    """The first statement other than `name`'s own draws whose expressions read `name`."""
    statements = [(f.name, list(f.args.values()) + list(f.target.indices)) for f in model.factors
                  if f.target.name != name]
    statements += [(d.target.name, [d.value]) for ds in model.definitions.values() for d in ds]
    return next((reader for reader, exprs in statements if any(reads(e, name) for e in exprs)), None)


def _check_imputable(factor, observed, model, dataset) -> None:
    """Missing cells of a response become latent, which needs a q of the response's family: counts,
    0/1 values, ordinals and Exponential responses have none, so an empty cell there is refused
    (by `ppl check` and `ppl infer` alike) rather than reported as imputed and then crashing."""
    dist = factor.dist
    if observed.all() or (dist.latent and dist.value != "binary"):
        return
    where = np.argwhere(~observed)[0]
    name = factor.target.name
    raise DataError("E417", f"`{name}` has an empty cell, but missing {dist.name} values cannot be imputed",
                    column=_column_name(model.data[name], where), row=int(where[0]) + 1,
                    source=dataset.source, hint="fill in the cell or drop the row; only continuous and "
                    "categorical responses are imputed")


def _above_trials(trials, values, dataset):
    if isinstance(trials, ast.Number):
        return values > trials.value
    if isinstance(trials, ast.Name) and trials.id in dataset.arrays:
        return values > dataset.arrays[trials.id]
    return np.zeros(values.shape, dtype=bool)


def _column_name(decl, where) -> str:
    binding = decl.binding
    if isinstance(binding, ast.Column):
        return binding.name
    if isinstance(binding, ast.ColumnList) and len(where) > 1:
        return binding.columns[int(where[1])].name
    return decl.name
