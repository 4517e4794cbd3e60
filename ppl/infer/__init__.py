"""Inference: build a problem from a checked model, data and analysis, and run the scheduler."""

from ppl.infer.build import Problem, build_problem
from ppl.infer.engine import DampingWarning, ElboDecreaseWarning, Options, Run, run

__all__ = ["build_problem", "Problem", "run", "Options", "Run", "ElboDecreaseWarning", "DampingWarning"]
