"""Prediction and held-out scoring on new data with a fitted posterior (`Posterior.predict`,
`Posterior.score`, `ppl predict`, `ppl score`): fold-in of the new rows' local variables with the
globals at q (`fold`), the predictive of each response cell (`predictive`), and the results. A
posterior with several parts (a grid's nodes, `Posterior.parts`) is folded in part by part, and
the predictive is the parts' mixed by their weights (`predictive.mixed`)."""

from __future__ import annotations

import numpy as np

from ppl.diagnostics import ModelError
from ppl.infer.engine import check_seed
from ppl.infer.weights import element_counts

from ppl.infer.predict.fold import fold_in
from ppl.infer.predict.predictive import CategoricalMixture, mixed, response_mixture
from ppl.infer.predict.result import Prediction, Score, local_marginals

INTERVAL = (0.025, 0.975)


def predict(posterior, data, model=None, na=None, seed=0) -> Prediction:
    """The locals of the new groups, fitted, and the predictive of every empty response cell."""
    check_seed(seed)
    model = model_of(posterior, model)
    folds = _folds(posterior, model, data, na=na, seed=seed)
    fold = folds[0][1]
    cells = {}
    for name, held in fold.held.items():
        if held.any():
            mixture = mixed([(w, response_mixture(f.problem, f.state, name, spreads=f.spreads)) for w, f in folds])
            flat = held.reshape(-1)
            values = [mixture.mean(), np.sqrt(mixture.var())] + [mixture.quantile(q) for q in INTERVAL]
            cells[name] = {k: np.where(flat, v, np.nan).reshape(held.shape)
                           for k, v in zip(("mean", "sd", "q2.5", "q97.5"), values)}
            weight = element_counts(model.checked, fold.new.dataset, {name: held.shape}).get(name)
            if weight is not None:  # a weighted row: each of the observations it stands for has this predictive
                cells[name]["count"] = np.where(held, weight.reshape(held.shape), np.nan)
            if isinstance(mixture, CategoricalMixture):  # a class's probability, per cell and class
                probs = mixture.probabilities()
                cells[name]["probs"] = np.where(flat[:, None], probs, np.nan).reshape(held.shape + probs.shape[-1:])
    plates = {n: v.plates for n, v in model.checked.variables.items()}
    return Prediction(cells, _locals(folds), fold.new.group_labels, fold.new.seen,
                      fold.plan.group_dim, plates, fold.new.dataset.source, dict(fold.new.dataset.levels))


def score(posterior, data, model=None, na=None, seed=0) -> Score:
    """log p(y_n | training data) of every observed response cell, each from its own predictive:
    every response cell is held out, so no cell informs the locals another is scored with. A
    weighted row scores as the observations it stands for: count × log p."""
    check_seed(seed)
    model = model_of(posterior, model)
    folds = _folds(posterior, model, data, hold_all=True, na=na, seed=seed)
    fold = folds[0][1]
    cells, counts = {}, {}
    for name, observed in fold.new.observed.items():
        factor = next(f for f in fold.problem.factors if f.factor.target.name == name)
        if type(factor).__name__ == "JointGaussian":
            raise ModelError("E352", f"`{name}` is a vector response: this version predicts its coordinates but "
                             "does not score its rows", span=factor.factor.span)
        mixture = mixed([(w, response_mixture(f.problem, f.state, name, spreads=f.spreads)) for w, f in folds])
        values = np.asarray(fold.new.dataset.arrays[name], dtype=float).reshape(-1)
        density = mixture.logpdf(values).reshape(observed.shape)
        weight = element_counts(model.checked, fold.new.dataset, {name: observed.shape}).get(name)  # row weights
        weight = np.ones(observed.shape) if weight is None else weight.reshape(observed.shape)
        counts[name] = np.where(observed, weight, np.nan)
        cells[name] = np.where(observed, np.where(weight > 0, weight * density, 0.0), np.nan)
    return Score(cells, fold.new.dataset.source, counts)


def _folds(posterior, model, data, **options) -> list:
    """(weight, fold-in) of every part of the posterior (one, or a grid's nodes), each part with
    the model it was fitted to; the new rows read once for all of them."""
    from ppl.data.held_out import read_new
    data = read_new(data, options.get("na"))
    return [(weight, fold_in(part, given, data, **options))
            for (weight, part), given in zip(posterior.parts, posterior.part_models(model))]


def _locals(folds: list) -> dict:
    """q of the new rows' locals: one fold's, or the mixture of the parts' (`ppl.infer.grid.mixture`)."""
    if len(folds) == 1:
        return local_marginals(folds[0][1])
    from ppl.infer.grid.mixture import mixture
    each = [local_marginals(f) for _, f in folds]
    weights = np.array([w for w, _ in folds])
    return {name: mixture([q[name] for q in each], weights) for name in each[0]}


def model_of(posterior, model):
    """The `Model` the posterior was fitted to: `model` (a `Model` or a path) checked against the
    posterior's origin, or rebuilt from the text and constants the posterior carries."""
    import ppl
    from ppl.infer.saved import check_model
    if model is None:
        origin = posterior.origin
        return ppl.compile(origin["text"], origin["model"], origin["constants"])
    model = model if isinstance(model, ppl.Model) else ppl.load(model)
    check_model(posterior.origin, model, "the posterior")
    return model


__all__ = ["predict", "score", "Prediction", "Score"]
