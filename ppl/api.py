"""The Python API: `load` and `compile` give a `Model`; the CLI calls the same functions."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ppl.diagnostics import ModelError
from ppl.lang import CheckedModel, check, parse


class Model:
    """A checked model. Cheap to make; `with_constants` re-checks with overrides (`--set`)."""

    def __init__(self, text: str, name: str = "<string>", constants: dict | None = None):
        self.text = text
        self.name = name
        self.checked: CheckedModel = check(parse(text, name), constants)

    def with_constants(self, **constants) -> "Model":
        """A copy of this model with constants overridden, checked again."""
        return Model(self.text, self.name, {**self.checked.overrides, **constants})

    def bind(self, data, source: str | None = None):
        """Data (CSV path, DataFrame or dict of arrays) → a checked `Dataset`."""
        from ppl.data import bind
        return bind(self.checked, data, source)

    def graph(self, dataset=None):
        """The factor graph as a NetworkX DiGraph (shapes concrete when a dataset is given)."""
        from ppl.graph import build
        return build(self.checked, dataset)

    def analyze(self, dataset=None, methods: dict | None = None):
        """The rule, with its reason, for every (factor, latent variable) edge."""
        from ppl.graph import analyze
        return analyze(self.checked, dataset, methods)

    def check_report(self, data=None, methods: dict | None = None) -> dict:
        """The `ppl check --format json` document."""
        dataset = self.bind(data) if data is not None else None
        return self.analyze(dataset, methods).to_json(self.checked, self.graph(dataset))

    def infer(self, data, *, seed=None, max_iter: int = 500, tol: float = 1e-6, set: dict | None = None,  # noqa: A002
              restarts: int = 1, methods: dict | None = None, time_limit: float | None = None,
              progress=None):
        """Fit q by message passing and return the `Posterior`.

        Parameters
        ----------
        data : str, pathlib.Path, pandas.DataFrame or dict of arrays
            The data; a path is read as CSV.
        seed : int, optional
            Seed of every random choice (initialisation, restarts, Monte Carlo).
        max_iter : int, default=500
            Sweeps at most.
        tol : float, default=1e-6
            Stop when the relative change of the ELBO over a sweep is below `tol`.
        set : dict, optional
            Constants to override (as ``--set`` does).
        restarts : int, default=1
            Runs from different initialisations; the one with the best ELBO is kept.
        methods : dict, optional
            Rule per factor, as ``--method`` does (``{"y": "cvi"}``).
        time_limit : float, optional
            Seconds after which the run stops (reported as not converged).
        """
        from ppl.infer import Options, build_problem, run
        from ppl.infer.posterior import build_posterior
        from ppl.infer.state import NumericalBreakdown
        model = self.with_constants(**set) if set else self
        dataset = model.bind(data)
        analysis = model.analyze(dataset, methods)
        problem = build_problem(model.checked, dataset, analysis)
        options = Options(max_iter=max_iter, tol=tol, seed=seed, restarts=restarts, time_limit=time_limit)
        with np.errstate(all="ignore"):  # overflow is detected (a non-finite ELBO names its factor), not warned
            try:
                return build_posterior(problem, run(problem, options, progress), analysis)
            except NumericalBreakdown as exc:
                raise ModelError("E502", f"q({exc.name}) broke down numerically: {exc.detail}",
                                 span=_variable_span(model.checked, exc.name),
                                 hint="a constant or data value far outside the prior's scale (near 1e300, or a "
                                      "precision of 1e8 next to one of 1) overflows; rescale it") from None

    def __repr__(self) -> str:
        return f"Model({self.name!r}, factors={[f.name for f in self.checked.factors]})"


def _variable_span(checked, name: str):
    """Where variable `name` is drawn; for a @joint group's q, named `(mu, Lambda)`, its first."""
    return checked.variables[name.strip("()").split(",")[0].strip()].span


def compile(text: str, name: str = "<string>", set: dict | None = None) -> Model:  # noqa: A001
    """Check model text and return a `Model`."""
    return Model(text, name, set)


def load(path, set: dict | None = None) -> Model:  # noqa: A002
    """Read and check a `.vim` file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError("E001", f"cannot read model file {path}: byte {exc.object[exc.start]:#04x} at offset "
                         f"{exc.start} is not UTF-8", hint="save the model as UTF-8 text") from None
    except OSError as exc:
        raise ModelError("E001", f"cannot read model file {path}: {exc.strerror or exc}") from None
    return Model(text, str(path), set)
