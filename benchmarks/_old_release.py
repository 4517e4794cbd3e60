"""The old release as a contender: ppl as it was before the fixed-point stopping rule
(`OLD_RELEASE`, the parent of the commit that brought it), exported with `git archive` and run
in a child process on today's model files, so that a table can set today's default beside the
default a user had then.

The child imports ppl from the export alone, fits each model with its defaults (seed 1) and
prints one JSON line per model: sweeps, CPU seconds of the fit (time.process_time: CPU, not
wall, so that the other jobs of a shared machine weigh less; the least over the rounds, a fit
shorter than `SHORT` called in each round until `SHORT` seconds of CPU are spent), the ELBO
and the ELBO of its own tight run (relative tol 1e-13: the ELBO's definition has changed
since for some models, so the old default is measured against its own fixed point), or the
error of a model the old release cannot run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.logistic_sweeps import SHORT  # CPU seconds each round of a short fit takes at least

ROOT = Path(__file__).resolve().parents[1]
OLD_RELEASE = "91e48f4^"  # 91e48f4 introduced the fixed-point rule and SQUAREM

CHILD = """
import json, sys, time, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import ppl
models, repeat, short = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
for name in sys.argv[5:]:
    try:
        model, best = ppl.load(f"{models}/{name}.vim"), float("inf")
        tight = model.infer(f"{models}/{name}.csv", seed=1, tol=1e-13, max_iter=3000)  # also warms up
        for _ in range(repeat):
            spent = 0.0
            while spent < short:  # a fit of milliseconds is called until `short` seconds of CPU are spent
                start = time.process_time()
                posterior = model.infer(f"{models}/{name}.csv", seed=1)
                took = time.process_time() - start
                best, spent = min(best, took), spent + took
        row = {"sweeps": posterior.iterations, "cpu": best, "elbo": posterior.elbo, "tight": tight.elbo}
    except Exception as error:  # the old release may not know a newer model's syntax
        row = {"error": f"{type(error).__name__}: {error}"[:200]}
    print(json.dumps({"name": name, **row}), flush=True)
"""


def export(directory: Path, commit: str = OLD_RELEASE) -> Path:
    """Write the tree of `commit` into `directory` (git archive | tar) and return it."""
    directory.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
    return directory


def measure(names: list, repeat: int, release: Path | None = None) -> dict:
    """{model: {"sweeps", "cpu", "elbo", "tight"} or {"error"}} of the old release's defaults; `release`
    an export made before (`export`), else one made for this call in a temporary directory."""
    if release is None:
        with tempfile.TemporaryDirectory() as tmp:
            return measure(names, repeat, export(Path(tmp) / "release"))
    env = {**os.environ, "PYTHONPATH": str(release)}
    argv = [str(release), str(ROOT / "models"), str(repeat), str(SHORT), *names]
    out = subprocess.run([sys.executable, "-c", CHILD, *argv],
                         env=env, cwd=release, capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {row.pop("name"): row for row in rows}
