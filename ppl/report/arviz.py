"""The posterior as ArviZ `InferenceData` (the `ppl[arviz]` extra; ArviZ 0.23, the newest on
the package index: 1.x's DataTree is not there yet), and as a netCDF file (`--output post.nc`).

Groups: `posterior` holds `draws` draws from q as one chain (a latent category as its 1-based
code); `observed_data` the data the model's `~` statements observe and `constant_data` the
other data (covariates, document ids), missing cells as NaN; `elbo_trace` the ELBO after each
sweep (dimension `sweep`), its standard errors and, when recorded, every factor's term. Axes
are named and labelled as in the model (`Posterior.dims`, `Posterior.coords`). Only this
module imports arviz and xarray.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np


def to_arviz(posterior, draws: int = 1000, seed=None, vars=None):  # noqa: A002
    """An `arviz.InferenceData` of the posterior (see the module docstring)."""
    from ppl.report.extras import optional
    from ppl.infer.posterior import coded
    az, xr = optional("arviz", "arviz"), optional("xarray", "arviz")
    values = {name: coded(posterior.marginals[name], v)[None] for name, v in posterior.draws(draws, seed, vars).items()}
    groups = {"posterior": _dataset(xr, posterior, values, ("chain", "draw"),
                                    {"chain": [0], "draw": np.arange(draws)})}
    data = _data(posterior)
    for group, names in (("observed_data", True), ("constant_data", False)):
        arrays = {n: v for n, v in data.items() if (n in posterior.observed) == names}
        if arrays:
            groups[group] = _dataset(xr, posterior, arrays, (), {})
    groups["elbo_trace"] = _trace(xr, posterior)
    with warnings.catch_warnings():  # elbo_trace is a group of ppl's own, outside ArviZ's scheme
        warnings.filterwarnings("ignore", message=".*group is not defined in the InferenceData scheme")
        return az.InferenceData(**groups)


def write_netcdf(posterior, path, draws: int = 1000, seed=None, vars=None) -> None:  # noqa: A002
    """`to_arviz(...).to_netcdf` into a temporary file in the same folder, then a rename."""
    from ppl.report.outputs import atomic
    with atomic(path, suffix=".nc") as tmp:
        to_arviz(posterior, draws, seed, vars).to_netcdf(tmp)


def _data(posterior) -> dict:
    """The data arrays (categories as 1-based codes, missing cells NaN). A loaded posterior
    reads them again from its data file, if that file is still there; else there are none."""
    dataset = posterior.dataset
    if dataset is None:
        source = posterior.origin.get("data")
        if not source or not Path(source).is_file():
            return {}
        import ppl
        model = ppl.compile(posterior.origin["text"], posterior.origin["model"], posterior.origin["constants"])
        dataset = model.bind(source)
    arrays = {}
    for name, values in dataset.arrays.items():
        values = np.asarray(values)
        values = values + 1 if name in dataset.levels else values
        mask = dataset.masks.get(name)
        if mask is not None:
            values = np.where(mask.reshape(mask.shape + (1,) * (values.ndim - mask.ndim)), values, np.nan)
        arrays[name] = values.astype(float) if values.dtype == bool else values
    return arrays


def _dataset(xr, posterior, arrays: dict, lead: tuple, lead_coords: dict):
    variables, coords = {}, dict(lead_coords)
    for name, array in arrays.items():
        dims = lead + tuple(posterior.dims.get(name, ()))
        dims = dims + tuple(f"{name}_dim_{i}" for i in range(len(dims), np.ndim(array)))
        variables[name] = (dims, np.asarray(array))
        for dim in dims[len(lead):]:
            if dim in posterior.coords:
                coords[dim] = posterior.coords[dim]
    return xr.Dataset(variables, coords=coords, attrs=_attrs(posterior))


def _trace(xr, posterior):
    sweeps = np.arange(1, len(posterior.trace) + 1)
    variables = {"elbo": ("sweep", np.asarray(posterior.trace, dtype=float)),
                 "elbo_se": ("sweep", np.asarray(posterior.trace_se or [0.0] * len(sweeps), dtype=float))}
    coords = {"sweep": sweeps}
    if posterior.term_trace:
        terms = list(posterior.term_trace[0])
        variables["elbo_term"] = (("sweep", "term"), np.array([[t[k] for k in terms] for t in posterior.term_trace]))
        coords["term"] = terms
    return xr.Dataset(variables, coords=coords, attrs=_attrs(posterior))


def _attrs(posterior) -> dict:
    origin = posterior.origin
    return {"inference_library": "ppl", "inference": "variational (message passing)",
            "elbo": float(posterior.elbo), "sweeps": int(posterior.iterations),
            "converged": int(posterior.converged), "model": origin.get("model", ""),
            "model_sha256": origin.get("sha256", ""), "data": origin.get("data", "")}
