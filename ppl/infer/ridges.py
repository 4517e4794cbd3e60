"""The ridge steps that follow an update: exact moves along directions that only the priors see
(a softmax's classes, ppl.infer.softmax_shift; an intercept against its group effects,
ppl.infer.intercept_shift), whichever mode updates (a batch sweep, an SVI step, a cluster's sweep).
The factorial models' levels (ppl.infer.factorial_levels) take theirs in the batch sweep."""

from __future__ import annotations

from ppl.infer.intercept_shift import shift_intercepts
from ppl.infer.softmax_shift import shift_classes


def shift_after_update(problem, state, name: str) -> None:
    """After the update of `name`: its shift if it is a softmax's class weights, and the intercept
    shifts whose later variable it is."""
    if name in problem.class_shifts:
        shift_classes(problem, state, name, problem.class_shifts[name])
    for a, u in problem.intercept_shifts.get(name, ()):
        shift_intercepts(problem, state, a, u)
