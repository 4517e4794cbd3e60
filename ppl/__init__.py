"""ppl: variational inference for probabilistic models by message passing.

    >>> import ppl
    >>> model = ppl.compile("data y: bool[N]\\n theta ~ Beta(1, 1)\\n y ~ Bernoulli(theta)")
    >>> [f.name for f in model.checked.factors]
    ['theta', 'y']
"""

from ppl.api import Model, compile, load
from ppl.diagnostics import DataError, ModelError, OptionError, PplError

__all__ = ["load", "compile", "Model", "PplError", "ModelError", "DataError", "OptionError"]
__version__ = "0.1.0"
