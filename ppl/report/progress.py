"""The progress bar of `ppl infer` on a terminal: sweeps of the maximum, the ELBO, the time
elapsed and an estimate of the time left (at the maximum: a run that converges stops sooner).

Nothing is shown, and rich (the `ppl[progress]` extra, ~30 ms to import) is not imported,
until a run has lasted `DELAY` seconds; without rich the bar is one plain status line. The
CLI makes one only when stderr is a terminal and `--quiet` is not given.
"""

from __future__ import annotations

import sys
import time

DELAY = 1.0  # seconds before anything is drawn: short runs print no bar at all


class Progress:
    """A callable `progress(sweep, elbo)` for `Model.infer`; `close()` when the run is over."""

    def __init__(self, max_sweeps: int, stream=None, delay: float = DELAY):
        self.total = max_sweeps
        self.stream = stream or sys.stderr
        self.delay = delay
        self.start = time.perf_counter()
        self.bar = None  # (rich Progress, task id), or "plain"

    def __call__(self, sweep: int, elbo: float) -> None:
        if self.bar is None and time.perf_counter() - self.start > self.delay:
            self.bar = self._open()
        if self.bar == "plain":
            self.stream.write(f"\r  sweep {sweep:5d} of {self.total}  ELBO {elbo:.6f}")
            self.stream.flush()
        elif self.bar is not None:
            bar, task = self.bar
            bar.update(task, completed=sweep, elbo=f"{elbo:.6f}")

    def _open(self):
        try:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
        except ImportError:  # the ppl[progress] extra is not installed
            return "plain"
        bar = Bar(TextColumn("sweep"), MofNCompleteColumn(), BarColumn(), TextColumn("ELBO {task.fields[elbo]}"),
                  TimeElapsedColumn(), TextColumn("left at most"), TimeRemainingColumn(),
                  console=Console(file=self.stream), transient=False)
        task = bar.add_task("infer", total=self.total, elbo="")
        bar.start()
        return bar, task

    def close(self) -> None:
        if self.bar == "plain":
            self.stream.write("\n")
        elif self.bar is not None:
            self.bar[0].stop()
