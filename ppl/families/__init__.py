"""Stateless exponential families used by the VMP engine.

Each family is a frozen dataclass whose methods map flat natural parameters
λ (shape plates + (size,)) to mean parameters E[t(x)] (same layout, equal to
∇A(λ)), log-partitions, densities, entropies, KLs, draws and summaries.
See ``base.py`` for the shared conventions.
"""

from .base import ExponentialFamily
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .categorical_chain import CategoricalChain
from .dirichlet import Dirichlet
from .exponential import Exponential
from .gamma import Gamma
from .lognormal import LogNormal
from .multinomial import Multinomial
from .mvnormal import MvNormal
from .normal import Normal
from .normal_chain import NormalChain
from .normal_wishart import NormalWishart
from .poisson import Poisson
from .wishart import Wishart

__all__ = [
    "ExponentialFamily",
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "CategoricalChain",
    "Dirichlet",
    "Exponential",
    "Gamma",
    "LogNormal",
    "Multinomial",
    "MvNormal",
    "Normal",
    "NormalChain",
    "NormalWishart",
    "Poisson",
    "Wishart",
]
