"""Plain coordinate sweeps from the engine's start, without any ridge step or acceleration: a
state still on its way along a ridge, for the ridge steps' tests."""

import numpy as np

from ppl.infer.initialise import initialise
from ppl.infer.update import update


def plain_sweeps(problem, sweeps: int, step: float = 1.0):
    """The state after `sweeps` sweeps of every variable's update with damping `step`."""
    state = initialise(problem, np.random.default_rng(0))
    for _ in range(sweeps):
        for name in problem.order:
            update(problem, state, name, step)
    return state
