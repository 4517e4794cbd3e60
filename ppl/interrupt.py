"""Ctrl-C during `ppl infer`: the first SIGINT asks the run to stop at the end of the current
sweep (so the last completed q can be reported and written, marked as interrupted); a second
one stops at once."""

from __future__ import annotations

import contextlib
import signal
import threading


class SweepInterrupt:
    """A progress callback wrapper: after a SIGINT it raises KeyboardInterrupt at the next sweep's
    end, which the engine turns into an interrupted run."""

    def __init__(self, progress=None):
        self.progress = progress
        self.requested = False

    def __call__(self, iteration: int, elbo: float) -> None:
        if self.progress is not None:
            self.progress(iteration, elbo)
        if self.requested:
            raise KeyboardInterrupt

    def _handle(self, signum, frame) -> None:
        if self.requested:  # the second Ctrl-C: stop now
            raise KeyboardInterrupt
        self.requested = True

    @contextlib.contextmanager
    def installed(self):
        """SIGINT handled by this object while the block runs (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self._handle)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)
