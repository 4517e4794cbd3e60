"""Checks of `ppl infer`'s options and output paths, made before any inference runs: a long run
must never end in "cannot write the output", and an output must never overwrite an input."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ppl.diagnostics import OptionError

OUTPUT_SUFFIXES = {"--output": (".json", ".csv", ".nc"), "--draws-output": (".csv",), "-o": (".csv",)}
IMAGE_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".eps", ".tif", ".tiff", ".webp")  # `ppl plot`: matplotlib's


def check_infer_options(args) -> None:
    """Raise an `OptionError` for the first invalid option of `ppl infer`."""
    if args.seed is not None and args.seed < 0:
        raise OptionError("E325", f"--seed {args.seed}: a seed is a non-negative integer")
    if args.draws is not None and args.draws < 0:
        raise OptionError("E326", f"--draws {args.draws}: the number of draws is zero or more")
    if args.draws and not args.draws_output and not (args.output or "").lower().endswith(".nc"):
        raise OptionError("E324", "--draws N needs --draws-output FILE.csv (or --output FILE.nc)")
    if args.time_limit is not None and not args.time_limit > 0:
        raise OptionError("E327", f"--time-limit {args.time_limit:g}: the limit is a positive number of seconds")
    if args.dask is not None and args.workers is not None:
        raise OptionError("E366", "--dask and --workers both name a cluster: give one")
    if args.workers is not None and args.workers < 1:
        raise OptionError("E366", f"--workers {args.workers}: a cluster has at least one worker")
    inputs = [Path(p) for p in (args.model, args.data) if p and not _pattern(p)]
    for flag, path in (("--output", args.output), ("--draws-output", args.draws_output)):
        if path:
            check_output(flag, Path(path), inputs)
    if args.output and args.draws_output and _same(Path(args.output), Path(args.draws_output)):
        raise OptionError("E328", f"--output and --draws-output both name {args.output}")


def check_output(flag: str, path: Path, inputs: list, suffixes: tuple | None = None) -> None:
    """The file `path` can be written: a known suffix (`suffixes`, by default the flag's), an
    existing writable folder, not a folder itself, and none of the input files."""
    suffixes = suffixes or OUTPUT_SUFFIXES[flag]
    if path.is_dir():
        raise OptionError("E320", f"{flag} {path}: this is a folder; give a file name")
    if path.suffix.lower() not in suffixes:
        raise OptionError("E321", f"{flag} {path}: use a {' or '.join(suffixes)} file name")
    folder = path.parent
    if not folder.is_dir():
        raise OptionError("E320", f"{flag} {path}: folder {folder} does not exist")
    try:  # the rename at the end needs a new file in the folder: make (and remove) one now
        with tempfile.NamedTemporaryFile(prefix=f".{path.name}.", dir=folder):
            pass
    except OSError as exc:
        raise OptionError("E320", f"{flag} {path}: cannot write in {folder}: {exc.strerror}") from None
    for source in inputs:
        if _same(path, source):
            raise OptionError("E328", f"{flag} {path} is an input file; it would be overwritten",
                              hint="write the results to another file")


def _pattern(path: str) -> bool:
    return any(c in path for c in "*?[")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False
