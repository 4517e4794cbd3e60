"""A grid posterior on disk and back, format `ppl-grid-posterior/2`.

The file holds the summary and the grid (`to_json`) for readers and, under `q`, what rebuilds
the mixture: the order of the variables, the cells' coordinates z_j (log h_j for a positive h:
written as z, not recomputed from h_j, so that loading is exact), the scopes, axes and
components, and under `q.parts` every node's posterior as `ppl.infer.saved` writes one (without
the model text: each node's model is the grid's with h set to h_j). Loading rebuilds each node
and mixes them again, so every mean, sd, quantile, weight and the ELBO come back identical.
Files of format `/1` held the summary alone and are refused (E765); parts that disagree with
one another or with the grid are E801.
"""

from __future__ import annotations

import numpy as np

from ppl.diagnostics import OptionError

FORMAT = "ppl-grid-posterior/2"
OLD = "ppl-grid-posterior/1"  # summary and grid only: not loadable


def grid_document(posterior, document) -> dict:
    """The JSON document of a `GridPosterior`; `document` writes one node's."""
    doc = posterior.to_json()
    parts = []
    for node in posterior.nodes:
        part = document(node)
        del part["origin"]
        parts.append(part)
    cell = posterior.marginals[posterior.grid["variable"]]
    doc["format"] = FORMAT
    doc["q"] = {"order": list(posterior.marginals), "centres": cell.centres.tolist(), "scopes": posterior.scopes,
                "components": posterior.components, "dims": {k: list(v) for k, v in posterior.dims.items()},
                "coords": posterior.coords, "observed": list(posterior.observed), "parts": parts}
    doc["origin"] = posterior.origin
    return doc


def load_grid(doc: dict, path):
    """The `GridPosterior` of a `/2` document read from `path`."""
    from ppl.infer.grid.mixture import CellMarginal
    from ppl.infer.grid.posterior import GridPosterior, mixed_marginals
    from ppl.infer.saved import components, entry, rebuild, run_fields
    with entry(path, "grid"):
        grid = doc["grid"]
        h, values, weights = _name(grid["variable"]), list(grid["nodes"]), _numbers(grid["weights"])
        width, log_scale = float(grid["width"]), grid["scale"] == "log"
    with entry(path, "q"):
        q = doc["q"]
        centres, parts, order = _numbers(q["centres"]), list(q["parts"]), list(q["order"])
    with entry(path, "origin"):
        origin = dict(doc["origin"])
        constants = dict(origin["constants"])
    if not len(parts) == len(values) == len(weights) == len(centres) > 0:
        raise _disagree(path, f"the grid has {len(values)} nodes, {len(weights)} weights and {len(centres)} "
                        f"centres, and `q.parts` {len(parts)} parts")
    nodes = [rebuild(part, path, f"q.parts[{j}].", {**origin, "constants": {**constants, h: value}})
             for j, (part, value) in enumerate(zip(parts, values))]
    _agree(nodes, order, h, path)
    marginals = mixed_marginals(order, h, CellMarginal(centres, width, weights, log_scale), nodes)
    with entry(path, "q"):
        fields = dict(scopes=dict(q["scopes"]), components=components(q["components"], marginals),
                      coords=dict(q["coords"]), dims={k: tuple(v) for k, v in q["dims"].items()},
                      observed=tuple(q["observed"]))
    with entry(path, ""):
        return GridPosterior(marginals, origin=origin, interrupted=doc["status"].startswith("interrupted"),
                             grid=grid, nodes=nodes, **run_fields(doc), **fields)


def _name(value) -> str:
    """A variable's name as saved (`entry` makes a TypeError E800)."""
    if not isinstance(value, str):
        raise TypeError(f"a variable's name is text, not {value!r}")
    return value


def _numbers(values) -> np.ndarray:
    """A saved list of numbers as a vector (`entry` makes a ValueError E800)."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{values!r} is not a list of numbers")
    return array


def _agree(nodes: list, order: list, h: str, path) -> None:
    """Every node has the variables of `order` but h, in any order (a node lists them as its own
    fit does), each of the first node's family and shape (E801)."""
    wanted = [name for name in order if name != h]
    for j, node in enumerate(nodes):
        if sorted(node.marginals) != sorted(wanted):
            raise _disagree(path, f"`q.parts[{j}]` has variables {list(node.marginals)}, the grid's are {wanted}")
        for name, marginal in node.marginals.items():
            first = nodes[0].marginals[name]
            if (marginal.name, np.shape(marginal.mean)) != (first.name, np.shape(first.mean)):
                raise _disagree(path, f"`q.parts[{j}]` has `{name}` {marginal.name} of shape "
                                f"{list(np.shape(marginal.mean))}, `q.parts[0]` {first.name} of shape "
                                f"{list(np.shape(first.mean))}")


def _disagree(path, message: str) -> OptionError:
    return OptionError("E801", f"{path}: the parts of a grid posterior must be fits of one model: {message}",
                       hint="the file was changed since ppl wrote it: save the posterior again")
