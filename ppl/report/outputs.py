"""Writing results to files, atomically: a temporary file in the same folder, then a rename,
so an interrupted run never leaves half a file behind."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ppl.diagnostics import OptionError


def require_folder(path: Path) -> None:
    if not path.parent.is_dir():
        raise OptionError("E320", f"cannot write {path}: folder {path.parent} does not exist")


@contextmanager
def atomic(path, suffix: str = ""):
    """The name of a temporary file in `path`'s folder for the block to write; renamed to `path`
    when the block ends, removed if it raises. The file gets the mode a plain `open` would give
    it (0666 less the umask; mkstemp's own is 0600)."""
    path = Path(path)
    require_folder(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    except OSError as exc:
        raise OptionError("E320", f"cannot write {path}: {exc.strerror}") from None
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_atomic(path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename (`atomic`)."""
    with atomic(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_posterior(posterior, path, vars=None, draws: int = 1000, seed=None, run: dict | None = None) -> None:  # noqa: A002
    """`.json`: the whole result, loadable (`ppl.Posterior.load`), with `run` (version, seed, options,
    inputs) when given; `.csv`: the summary table in the layout of CmdStan's `stansummary --csv`;
    `.nc`: ArviZ InferenceData as netCDF."""
    from ppl.infer.saved import document
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        # compact: with `indent` json runs its pure-Python encoder, 1.5× slower on a mixture's arrays
        write_atomic(path, json.dumps(_finite(({"run": run} if run is not None else {}) | document(posterior)))
                     + "\n")
    elif suffix == ".csv":
        write_atomic(path, summary_csv(posterior, vars))
    elif suffix == ".nc":
        from ppl.report.arviz import write_netcdf
        write_netcdf(posterior, path, draws, seed, vars)
    else:
        raise OptionError("E321", f"--output {path}: use a .json, .csv or .nc file name")


def summary_csv(posterior, vars=None) -> str:  # noqa: A002
    """The summary as CmdStan's `stansummary --csv` writes it: `#` comment lines about the run,
    a header `name,Mean,StdDev,2.5%,50%,97.5%`, one row per element (plus the family). Means
    and sds are exact marginals of q, so there are no MCSE, N_Eff or R_hat columns."""
    from ppl.infer.selection import omitted
    rows = posterior.summary_rows(vars, levels=(0.025, 0.5, 0.975))
    columns = {"name": rows["variable"], "Mean": rows["mean"], "StdDev": rows["sd"], "2.5%": rows["q2.5"],
               "50%": rows["q50"], "97.5%": rows["q97.5"], "family": rows["family"]}
    status = "converged" if posterior.converged else "not converged"
    comments = [f"# ppl posterior: model {posterior.origin.get('model', '?')}, data {posterior.origin.get('data', '?')}",
                f"# ELBO {posterior.elbo!r} after {posterior.iterations} sweeps ({status})"]
    comments += [f"# {line}" for line in omitted(posterior, vars)]
    return "\n".join(comments) + "\n" + _csv_text(columns)


def write_draws(posterior, n: int, seed, path) -> None:
    """`n` draws from q as CSV: one row per draw, one column per element (`mu[1,2]`)."""
    if Path(path).suffix.lower() != ".csv":
        raise OptionError("E322", f"--draws-output {path}: use a .csv file name")
    write_atomic(path, _csv_text(posterior.draw_columns(n, seed)))


def _csv_text(columns: dict) -> str:
    """CSV of columns given as lists of equal length: a header row of their names, floats
    written in full (repr) precision, NaN as an empty cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([None if isinstance(x, float) and math.isnan(x) else x for x in row]
                     for row in zip(*columns.values()))
    return out.getvalue()


def _finite(value):
    """JSON has no inf or NaN: write them as null. A long list of numbers that are all finite
    (the bulk of a document: means and natural parameters) is checked in one numpy pass and kept."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) > 16 and _all_finite(value):
            return value
        return [_finite(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _all_finite(values: list) -> bool:
    """True for a (nested, rectangular) list of finite numbers; False for anything else."""
    try:
        array = np.asarray(values)
    except ValueError:  # ragged
        return False
    return array.dtype.kind in "fiu" and bool(np.isfinite(array).all())
