"""A fused sweep's problem and the same run without it, for the tests that hold a fused kernel
(Gaussian mixture, latent class) to the generic engine's updates."""

import ppl
from ppl.infer import build_problem, run


def problem_of(text: str, data, **compile_options):
    model = ppl.compile(text, **compile_options)
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset))


def generic(problem, options):
    """The same run with the fused sweep switched off."""
    kernel, problem.kernel = problem.kernel, None
    try:
        return run(problem, options)
    finally:
        problem.kernel = kernel
