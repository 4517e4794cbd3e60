"""One fit, packaged: run the scheduler on a built problem and turn the result into a
`Posterior`, with numerical breakdown reported at the variable. `Model.infer` calls it once; a
grid over a hyperparameter (ppl.infer.grid) calls it once per node, warm-started."""

from __future__ import annotations

import numpy as np

from ppl.diagnostics import ModelError


def fit(checked, dataset, analysis, spec, options, progress=None, source=None, cluster=None, initial=None):
    """(Posterior, Run) of one run of `checked` on `dataset`; `initial(problem, rng)`: the
    starting state (default: `ppl.infer.initialise`)."""
    from ppl.infer import build_problem, run
    from ppl.infer.posterior_build import build_posterior
    from ppl.infer.state import NumericalBreakdown
    problem = build_problem(checked, dataset, analysis, spec)
    with np.errstate(all="ignore"):  # overflow is detected (a non-finite ELBO names its factor), not warned
        try:
            result = run(problem, options, progress, source, initial=initial, cluster=cluster)
            return build_posterior(problem, result, analysis), result
        except NumericalBreakdown as exc:
            raise ModelError("E502", f"q({exc.name}) broke down numerically: {exc.detail}",
                             span=variable_span(checked, exc.name),
                             hint="a constant or data value far outside the prior's scale (near 1e300, or a "
                                  "precision of 1e8 next to one of 1) overflows; rescale it") from None


def variable_span(checked, name: str):
    """Where variable `name` is drawn; for a @joint group's q, named `(mu, Lambda)`, its first."""
    from ppl.infer.factors.joint import key_variable
    return checked.variables[key_variable(name)].span
