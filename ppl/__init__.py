"""ppl: variational inference for probabilistic models by message passing.

    >>> import ppl
    >>> model = ppl.compile("data y: bool[N]\\n theta ~ Beta(1, 1)\\n y ~ Bernoulli(theta)")
    >>> [f.name for f in model.checked.factors]
    ['theta', 'y']
"""

from ppl.api import Model, compile, load
from ppl.diagnostics import DataError, ModelError, OptionError, PplError

__all__ = ["load", "compile", "Model", "Posterior", "PplError", "ModelError", "DataError", "OptionError"]
__version__ = "0.1.0"


def __getattr__(name):
    """`ppl.Posterior` on first use (numpy and the families are not needed to check a model)."""
    if name == "Posterior":
        from ppl.infer.posterior import Posterior
        return Posterior
    raise AttributeError(f"module 'ppl' has no attribute {name!r}")
