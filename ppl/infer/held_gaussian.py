"""The interface of a Gaussian vector's q held in a structured form rather than as the family's
D + D² arrays: in data space (ppl.infer.low_rank.KernelGaussian, D > N) or by its coordinate
sites (ppl.infer.coordinate_gaussian.CoordinateGaussian, a GP's)."""

from __future__ import annotations

import numpy as np


class HeldGaussian:
    """A Gaussian vector's q held in a structured form that its readers know (`KernelGaussian`,
    ppl.infer.coordinate_gaussian.CoordinateGaussian): `mean`, `sd`, `entropy`, the margins of rows
    (`linear`, `quadratic`), the stopping rule's `largest_shift`, `sample`, and the family's D × D
    `natural` and `moments` formed on demand; `factored`, the `GaussianSum` it was solved from.
    Immutable once solved."""

    _natural = _moments = None  # the family's (1, D + D²) arrays, once formed

    def copy(self) -> "HeldGaussian":
        return self  # immutable

    def natural(self) -> np.ndarray:
        """(1, D + D²): λ in the family's layout, formed once on demand."""
        if self._natural is None:
            self._natural = self.factored.dense()
        return self._natural

    def moments(self) -> np.ndarray:
        """(1, D + D²): (E[x], E[x xᵀ]) = (μ, Σ + μμᵀ), formed once on demand."""
        if self._moments is None:
            second = self._covariance()
            second += np.outer(self.mean, self.mean)
            self._moments = np.concatenate([self.mean, second.reshape(-1)])[None, :]
        return self._moments

    def _covariance(self) -> np.ndarray:
        """Σ (D × D), a new array: what only `moments` forms."""
        raise NotImplementedError
