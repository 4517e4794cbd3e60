"""A posterior on disk and back: the JSON of `ppl infer --output post.json` holds the summary
for readers and, under `q`, what rebuilds the `Posterior`: each variable's family and natural
parameters (non-finite entries as strings), the `@joint` groups, each Gaussian block's joint q,
the trace, scopes, components, axis names and coordinates, and the model text, its hash and the
data source.

Nothing is written twice: a Categorical's natural parameters are log p up to a constant, and its
probabilities p are the summary's `mean`, so its q entry says `"natural": {"log": "mean"}` and
is rebuilt as log p (equal to rounding: p below the smallest double is 0, a zero-probability
category); its summary `sd`, √(p(1 − p)), is null.

A grid posterior's file holds one such document per node (ppl.infer.grid.saved). `rebuild`
turns a document into a `Posterior`; an entry it cannot read is E800, named by its JSON path.
"""

from __future__ import annotations

import dataclasses
import json
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ppl import families as fam
from ppl.diagnostics import ModelError, OptionError, Source, Span
from ppl.infer.block_q import BlockQ
from ppl.infer.marginals import FamilyMarginal, ImputedMarginal, JointDraws

FORMAT = "ppl-posterior/1"
_DAMAGED = "the file was changed or cut short since ppl wrote it: save the posterior again"


def document(posterior) -> dict:
    """The JSON document of a posterior: its summary (`to_json`) and its q."""
    from ppl.infer.selection import chosen
    if hasattr(posterior, "grid"):  # a mixture over a grid's nodes: every node's document
        from ppl.infer.grid.saved import grid_document
        return grid_document(posterior, document)
    shown = set(chosen(posterior))  # priors of the variables a plot shows by default
    doc = posterior.to_json()
    doc["format"] = FORMAT
    doc["q"] = {
        "order": list(posterior.marginals),
        "variables": {name: {"family": _family(m.family), "natural": _natural(m),
                             "observed": None if m.observed_mask is None else _array(m.observed_mask),
                             **({"predictive": _mixture(m.predictive)} if isinstance(m, ImputedMarginal) else {})}
                      for name, m in posterior.marginals.items() if isinstance(m, FamilyMarginal)
                      and not any(name in (g.mean, g.precision) for g in posterior.joint)},
        "joint": [{"mean": g.mean, "precision": g.precision, "family": _family(g.family),
                   "natural": _array(g.natural), "scalar": g.scalar} for g in posterior.joint],
        "blocks": [block.document() for block in posterior.blocks],
        "scopes": posterior.scopes, "components": posterior.components,
        "dims": {k: list(v) for k, v in posterior.dims.items()}, "coords": posterior.coords,
        "term_trace": posterior.term_trace, "restart": posterior.restart,
        "priors": {name: _array(nat) for name, nat in posterior.priors.items() if name in shown},
        "observed": list(posterior.observed),
    }
    doc["origin"] = posterior.origin
    return doc


def load(path, model=None):
    """The `Posterior` saved at `path`; checked against `model` (a `Model` or a path) if given."""
    from ppl.infer.grid import saved as grid
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise OptionError("E341", f"cannot read posterior file {path}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    except json.JSONDecodeError as exc:
        raise OptionError("E341", f"{path}:{exc.lineno}:{exc.colno}: not a JSON file ({exc.msg})") from None
    kind = doc.get("format") if isinstance(doc, dict) else None
    if kind == grid.OLD:
        raise OptionError("E765", f"{path} is a grid posterior saved by an older ppl ({grid.OLD}): it holds the "
                          "summary and the grid but not the nodes' q, so it cannot be loaded",
                          hint=f"fit again and save: grid posteriors are now saved whole ({grid.FORMAT})")
    if kind not in (FORMAT, grid.FORMAT) or "q" not in doc:
        raise OptionError("E342", f"{path} is not a posterior saved by ppl (no `format: {FORMAT}`)",
                          hint="write one with `ppl infer MODEL DATA --output post.json` or `Posterior.save`")
    with entry(path, ""):
        origin = doc["origin"]
        if model is not None:
            check_model(origin, model, path)
    return grid.load_grid(doc, path) if kind == grid.FORMAT else rebuild(doc, path)


@contextmanager
def entry(path, at: str):
    """Inside: a missing key or a value of the wrong kind is E800, naming the entry's JSON path `at`."""
    where = f"entry `{at.rstrip('.')}`" if at.rstrip(".") else "the top level"
    try:
        yield
    except KeyError as exc:
        raise OptionError("E800", f"{path}: {where} has no `{exc.args[0]}`", hint=_DAMAGED) from None
    except (TypeError, ValueError, AttributeError, IndexError) as exc:
        raise OptionError("E800", f"{path}: {where} cannot be read ({exc})", hint=_DAMAGED) from None


def rebuild(doc: dict, path, at: str = "", origin: dict | None = None):
    """The `Posterior` of document `doc`, found at JSON path `at` of file `path` (E800 names the
    entry it cannot read); `origin`: the model it came from, when the document does not hold it."""
    from ppl.infer.posterior import Posterior, assemble
    with entry(path, at):
        q, summary = doc["q"], doc["variables"]
    own = {}
    with entry(path, f"{at}q"):
        variables = q["variables"].items()
    for name, v in variables:
        with entry(path, f"{at}q.variables.{name}"):
            family, natural = _unfamily(v["family"]), _unnatural(v["natural"], summary[name])
            family.check_valid(natural)  # an edited entry: a q outside its family is E800 here, not nonsense later
            observed = None if v["observed"] is None else _unarray(v["observed"]).astype(bool)
            own[name] = FamilyMarginal(family, natural, observed) if "predictive" not in v else \
                ImputedMarginal(family, natural, observed, _unmixture(v["predictive"]))
    with entry(path, f"{at}q.joint"):
        joint = [JointDraws(g["mean"], g["precision"], _unfamily(g["family"]), _unarray(g["natural"]),
                            g["scalar"]) for g in q["joint"]]
    blocks = []
    for i, b in enumerate(q.get("blocks", [])):  # a file from before blocks were kept has none
        with entry(path, f"{at}q.blocks.{i}"):
            blocks.append(BlockQ.from_document(b))
    with entry(path, f"{at}q"):
        marginals = assemble(q["order"], own, joint)
        fields = dict(restart=int(q["restart"]), joint=joint, blocks=blocks, scopes=dict(q["scopes"]),
                      components=components(q["components"], marginals), dims={k: tuple(v) for k, v in q["dims"].items()},
                      coords=dict(q["coords"]), term_trace=list(q["term_trace"]),
                      priors={k: _unarray(v) for k, v in q["priors"].items()}, observed=tuple(q["observed"]))
    with entry(path, at):
        return Posterior(marginals, origin=dict(origin or doc["origin"]), **run_fields(doc), **fields)


def components(saved, marginals: dict) -> dict:
    """A document's `components`, {selector: {variable: axis}}, each selector one of `marginals`
    (`entry` makes the ValueError E800)."""
    found = dict(saved)
    for selector, members in found.items():
        if selector not in marginals or not isinstance(members, dict):
            raise ValueError(f"`components` lists `{selector}`: {members!r}, not the members of a selector")
    return found


def run_fields(doc: dict) -> dict:
    """The `Posterior` fields of the run that a saved document holds at its top level: the ELBO,
    its trace and terms, the sweeps, the time, the analyzer's tags, the levels, the notes and the
    under-coverage records."""
    from ppl.graph.analyze import Tag
    return dict(elbo=float(doc["elbo"]), trace=list(doc["trace"]), elbo_terms=dict(doc["elbo_terms"]),
                iterations=int(doc["iterations"]), converged=bool(doc["converged"]), seconds=float(doc["seconds"]),
                tags=tuple(Tag(t["factor"], t["variable"], "", "", t["rule"], t["reason"]) for t in doc["factors"]),
                levels=dict(doc["levels"]), notes=list(doc["notes"]), trace_se=list(doc["trace_se"]),
                coverage=list(doc.get("coverage", ())))


def check_model(origin: dict, model, path) -> None:
    """Refuse a posterior fitted to another model text or other constants (`--set`)."""
    import ppl
    model = model if isinstance(model, ppl.Model) else ppl.load(model)
    text, name = model.text, model.name
    if text != origin["text"]:
        ours, theirs = text.splitlines(), origin["text"].splitlines()
        line = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
        line = min(line + 1, max(len(ours), 1))
        span = Span(line, 1, line, len(ours[line - 1]) + 1 if ours else 1, Source(text, name))
        raise ModelError("E343", f"{path} was fitted to another model ({origin['model']}, sha256 "
                                 f"{origin['sha256'][:12]}): the texts first differ at this line", span=span,
                         hint=f"fit this model again, or load the posterior with {origin['model']}")
    if dict(model.checked.overrides) != origin["constants"]:
        raise ModelError("E344", f"{path} was fitted with constants {origin['constants'] or 'as written'}, "
                                 f"this model has {dict(model.checked.overrides) or 'them as written'}",
                         hint="pass the same --set values")


def _family(family) -> dict:
    return {"class": type(family).__name__, "args": dataclasses.asdict(family)}


def _unfamily(spec: dict):
    if spec["class"] not in fam.__all__ or not isinstance(getattr(fam, spec["class"]), type):
        raise ValueError(f"`{spec['class']}` is not a family")
    return getattr(fam, spec["class"])(**spec["args"])


def _natural(marginal):
    """A marginal's natural parameters, or for a Categorical where to find them (see the top)."""
    return {"log": "mean"} if isinstance(marginal.family, fam.Categorical) else _array(marginal.natural)


def _unnatural(spec: dict, summary: dict) -> np.ndarray:
    if "log" in spec:
        with np.errstate(divide="ignore"):  # an observed cell's mean is NaN (data): any q will do there
            return np.nan_to_num(np.log(np.asarray(summary[spec["log"]], dtype=float)), nan=0.0, posinf=np.inf,
                                 neginf=-np.inf)
    return _unarray(spec)


PREDICTIVES = ("norm", "t", "bernoulli", "binom", "betabinom", "nbinom", "poisson")  # scipy.stats names


def _mixture(mixture) -> dict:
    """An imputed cells' predictive (`ppl.infer.predict.predictive.Mixture`): its scipy.stats
    family by name and its (cells, components) arrays, each cut to one row or one column where
    it is the same along the other (a global τ's nodes and weights, a cell's mean): the file
    grows by about one number per component of an empty cell, not three."""
    return {"dist": mixture.dist.name, "discrete": mixture.discrete, "cells": len(mixture.weights),
            "weights": _array(_constant_cut(mixture.weights)),
            "params": [_array(_constant_cut(p)) for p in mixture.params]}


def _constant_cut(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.shape[0] > 1 and np.array_equal(a, np.broadcast_to(a[:1], a.shape), equal_nan=True):
        a = a[:1]
    if a.shape[1] > 1 and np.array_equal(a, np.broadcast_to(a[:, :1], a.shape), equal_nan=True):
        a = a[:, :1]
    return a


def _unmixture(doc: dict):
    from scipy import stats
    from ppl.infer.predict.predictive import Mixture
    if doc["dist"] not in PREDICTIVES:
        raise ValueError(f"`{doc['dist']}` is not a predictive family")
    arrays = [_unarray(doc["weights"])] + [_unarray(p) for p in doc["params"]]
    shape = (int(doc["cells"]), max(a.shape[1] for a in arrays))
    full = [np.broadcast_to(a, shape) for a in arrays]
    return Mixture(getattr(stats, doc["dist"]), full[0], tuple(full[1:]), bool(doc["discrete"]))


def _array(values) -> dict:
    """Shape and flat values; ±inf and NaN (not JSON) as strings."""
    values = np.asarray(values, dtype=float)
    flat = values.ravel().tolist()
    if not np.isfinite(values).all():
        flat = [x if np.isfinite(x) else str(x) for x in flat]
    return {"shape": list(values.shape), "data": flat}


def _unarray(spec: dict) -> np.ndarray:
    return np.array([float(x) for x in spec["data"]], dtype=float).reshape(spec["shape"])
