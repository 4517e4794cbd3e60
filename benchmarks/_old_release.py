"""The old release as a contender: ppl as it was before the fixed-point stopping rule
(`OLD_RELEASE`, the parent of the commit that brought it), exported with `git archive` and run
in a child process on today's model files, so that a table can set today's default beside the
default a user had then.

The child imports ppl from the export alone and stays up: asked for a model, it fits it with
its defaults (seed 1) for one round and answers one JSON line: sweeps, CPU seconds of the fit
(time.process_time: CPU, not wall, so that the other jobs of a shared machine weigh less; a fit
shorter than `SHORT` called until `SHORT` seconds of CPU are spent, the least taken), the ELBO
and the ELBO of its own tight run (relative tol 1e-13: the ELBO's definition has changed since
for some models, so the old default is measured against its own fixed point), or the error of a
model the old release cannot run. One round at a time, so that the caller interleaves the old
release's rounds with today's runs (benchmarks/convergence.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.logistic_sweeps import SHORT  # CPU seconds each round of a short fit takes at least

ROOT = Path(__file__).resolve().parents[1]
OLD_RELEASE = "91e48f4^"  # 91e48f4 introduced the fixed-point rule and SQUAREM

CHILD = """
import json, sys, time, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import ppl
models, short = sys.argv[2], float(sys.argv[3])
loaded = {}
for line in sys.stdin:  # one request a line: a model's name; one JSON line back
    name = line.strip()
    try:
        if name not in loaded:  # first request: load, and its tight run (which also warms up)
            model = ppl.load(f"{models}/{name}.vim")
            loaded[name] = model, model.infer(f"{models}/{name}.csv", seed=1, tol=1e-13, max_iter=3000).elbo
        model, tight = loaded[name]
        best, spent = float("inf"), 0.0
        while spent < short:  # a fit of milliseconds is called until `short` seconds of CPU are spent
            start = time.process_time()
            posterior = model.infer(f"{models}/{name}.csv", seed=1)
            took = time.process_time() - start
            best, spent = min(best, took), spent + took
        row = {"sweeps": posterior.iterations, "cpu": best, "elbo": posterior.elbo, "tight": tight}
    except Exception as error:  # the old release may not know a newer model's syntax
        row = {"error": f"{type(error).__name__}: {error}"[:200]}
    print(json.dumps(row), flush=True)
"""


def export(directory: Path, commit: str = OLD_RELEASE) -> Path:
    """Write the tree of `commit` into `directory` (git archive | tar) and return it."""
    directory.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
    return directory


class Release:
    """The old release in a child process that answers one request at a time, so that its rounds
    can take turns with today's: `round(name)` is one round of the model's default fit (the least
    CPU time over the calls that fill `SHORT` seconds), as {"sweeps", "cpu", "elbo", "tight"} (its
    own tight run's ELBO) or {"error"}. Use as a context manager; `release` is an export
    (`export`)."""

    def __init__(self, release: Path):
        env = {**os.environ, "PYTHONPATH": str(release)}
        argv = [str(release), str(ROOT / "models"), str(SHORT)]
        self.child = subprocess.Popen([sys.executable, "-c", CHILD, *argv], env=env, cwd=release, text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def round(self, name: str) -> dict:
        self.child.stdin.write(name + "\n")
        self.child.stdin.flush()
        line = self.child.stdout.readline()
        if not line:
            raise RuntimeError(f"the old release's process ended while fitting {name}")
        return json.loads(line)

    def __enter__(self) -> "Release":
        return self

    def __exit__(self, *exc) -> None:
        self.child.stdin.close()
        self.child.wait()
