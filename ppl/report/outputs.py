"""Writing results to files, atomically: a temporary file in the same folder, then a rename,
so an interrupted run never leaves half a file behind."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from ppl.diagnostics import OptionError


def write_atomic(path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename; the file gets the mode a
    plain `open` would give it (0666 less the umask; mkstemp's own is 0600)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise OptionError("E320", f"cannot write {path}: folder {path.parent} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise OptionError("E320", f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_posterior(posterior, path, run: dict | None = None) -> None:
    """`.json`: the whole result, with `run` (version, seed, options, inputs) when given; `.csv`:
    the summary table, one row per element."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        document = ({"run": run} if run is not None else {}) | posterior.to_json()
        write_atomic(path, json.dumps(_finite(document), indent=1) + "\n")
    elif suffix == ".csv":
        write_atomic(path, _csv_text(posterior.summary_rows()))
    else:
        raise OptionError("E321", f"--output {path}: use a .json or .csv file name")


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
    """JSON has no inf or NaN: write them as null."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
