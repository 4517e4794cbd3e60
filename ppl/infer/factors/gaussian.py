"""`y ~ Normal(m, τ)` and `y ~ MvNormal(m, Λ)`: VMP messages to the value, to every Gaussian
read in the linear mean, and to a Gamma / Wishart precision (scaled, isotropic or ARD).

With E[(y−m)²] = E[y²] − 2E[y]E[m] + E[m²] (y, m and τ independent under mean field):
  E[log N] = ½E[log τ] − ½log 2π − ½E[τ]E[(y−m)²]                 (MvNormal: traces)
  to y:    (E[τ]E[m], −½E[τ])
  to u in term a·u of m = a·u + b:  (E[τ]E[a](E[y] − E[b]), −½E[τ]E[a²])
  to τ (Gamma, precision = s·τ):   (½, −½ s E[(y−m)²])
"""

from __future__ import annotations

import functools

import numpy as np

from ppl.families.base import chol_logdet, diagonal_of, inverse_of_factor, stack_last
from ppl.infer.access import Unsupported
from ppl.infer.diagonal import constant_diagonal
from ppl.infer.factors.base import FactorRuntime
from ppl.infer.linear import LinearBuilder, expand, form_mean, form_moments
from ppl.infer.linear_message import pack, read_message
from ppl.infer.coordinate_gaussian import CoordinateGaussian
from ppl.infer.low_rank import Diagonal, GaussianSum, KernelGaussian
from ppl.lang import ast

LOG_2PI = np.log(2 * np.pi)


class GaussianFactor(FactorRuntime):
    _value_key = None  # version key of the cached message to the value (`message`): none yet
    _error_key = None  # version key of the cached E[(y−m)²] (`_squared_error`): none yet

    def __init__(self, factor, model, env, dataset, families):
        super().__init__(factor, model, env, dataset)
        self.families = families
        self.dim = families[factor.target.name].event_shape[0] if factor.dist.name == "MvNormal" else 0
        self.mean = LinearBuilder(self.builder, self.plate, model, self.dim).build(self.args["mean"])
        self.add_linear_reads(self.mean)
        role = next(r for r in ("precision", "sd", "var", "cov") if r in self.args)
        self.precision = _Precision(self, role, self.args[role], model)
        # the mean the constant 0 (a prior N(0, s), a GP's): E[(y − m)²] is E[y²], E[(y − m)(y − m)ᵀ] is E[y yᵀ]
        self._zero_mean = not self.mean.terms and not np.any(self.mean.offset)

    # -- moments of the pieces
    def _value(self, state):
        m = self.target.gather(state.moments(self.factor.target.name))
        if not self.dim:
            return m[..., 0], m[..., 1]
        d = self.dim
        return m[..., :d], m[..., d:].reshape(m.shape[:-1] + (d, d))

    def _squared_error(self, state):
        """E[(y−m)²] (scalar) or E[(y−m)(y−m)ᵀ] (vector), plate + (C,) [+ (D, D)], reused while y
        and the reads of m are unchanged (the message to τ and the ELBO of a sweep need the same)."""
        key = self.version_key(state, self._error_names)
        if self._error_key != key:
            self._error_key, self._error_value = key, self._fresh_squared_error(state)
        return self._error_value

    @functools.cached_property
    def _error_names(self) -> tuple:
        """What E[(y−m)²] depends on: the value and every latent of the mean."""
        return tuple(sorted({self.factor.target.name, *(access.name for access in self.mean.reads())}))

    def _fresh_squared_error(self, state):
        y1, y2 = self._value(state)
        if self._zero_mean and (y2.shape[:-2] == self.mean.offset.shape[:-1] if self.dim else
                                y2.shape == self.mean.offset.shape):  # (no broadcast would widen y2)
            return y2  # the general formula's numbers (y2 − 0 + 0, for finite moments), without its arrays
        m1, m2 = form_moments(state, self.mean)
        if not self.dim:
            return y2 - 2 * y1 * m1 + m2
        cross = np.einsum("...i,...j->...ij", y1, m1)
        return y2 - cross - cross.swapaxes(-1, -2) + m2

    def _expected_log(self, state):
        kernel = state.kernel_of(self.factor.target.name) if self.dim else None
        err = self._held_error(state, kernel) if kernel is not None else None
        if err is not None:
            return 0.5 * self.precision.logdet - 0.5 * self.dim * LOG_2PI - 0.5 * err
        prec, logdet = self.precision.expect(state)
        err = self._squared_error(state)
        if not self.dim:
            return 0.5 * logdet - 0.5 * LOG_2PI - 0.5 * prec * err
        return 0.5 * logdet - 0.5 * self.dim * LOG_2PI - 0.5 * np.einsum("...ij,...ji->...", prec, err)

    def _held_error(self, state, kernel):
        """E[(x − m)ᵀ P (x − m)] read off a q held in a structured form without its D × D
        covariance, or None when this statement's precision is not one the form weighs by."""
        if isinstance(kernel, CoordinateGaussian) and self._own_prior(state, kernel):
            return kernel.prior_error(self.mean.offset)  # tr(P Σ) from the sites
        if isinstance(kernel, KernelGaussian) and self.precision.diagonal is not None and not self.mean.terms:
            # q of the value held in data space (ppl.infer.low_rank): Σ_d P_d (Var w_d + (E w_d − m_d)²)
            p = self.precision.diagonal
            if kernel.prior.p is p:  # the solve's prior is this statement's own message (`_diagonal_message`)
                return kernel.prior_error()
            return kernel.weighted_variance(p) + np.sum(p * (kernel.mean - self.mean.offset) ** 2, -1)
        return None

    def _own_prior(self, state, kernel) -> bool:
        """Whether q's dense part is this statement's own constant message (a GP's prior): its
        precision is the one `kernel.prior_error` weighs by."""
        return self.precision.kind == "const" and not self.mean.terms and \
            kernel.prior.base is self.message(state, self.factor.target.name, True)

    # -- messages
    def _message(self, state, access):
        if access is self.target:
            return self._to_value(state)
        if access is self.precision.access:
            return self.precision.message(state, self._squared_error(state))
        return self._to_mean_read(state, access)

    def message(self, state, name: str, factored: bool = False):
        """The summed message; to the value, when the statement reads it once, the same array
        while the variables it does read are unchanged (a constant prior's D + D² message is
        made once, and a data-space solve recognises it: ppl.infer.low_rank)."""
        if name != self.factor.target.name or len(self.reads.get(name, ())) != 1:
            return super().message(state, name, factored)
        key = self.version_key(state, [n for n in self.reads if n != name]) + (factored,)
        if self._value_key != key:
            diagonal = self._diagonal_message(state) if factored else None
            self._value_key = key
            self._value_message = super().message(state, name, factored) if diagonal is None else diagonal
        return self._value_message

    def _diagonal_message(self, state):
        """The message to a whole vector from a constant diagonal precision P and a mean m free of
        latents, (P m, −½ diag P), as a `GaussianSum` of a `Diagonal`: D numbers, never D² (the
        prior `w ~ MvNormal(zeros(D), eye(D))` of a data-space solve); None for any other statement."""
        target = self.target
        if self.precision.diagonal is None or self.mean.terms or self.selector is not None or self.plate.shape \
                or not target.plate_free or target.size != 1 or self.count(self.factor.target.name) is not None:
            return None
        offset = self.mean.offset.reshape(-1, self.dim)
        if len(offset) != 1:
            return None
        p = self.precision.diagonal
        return GaussianSum(Diagonal(p * offset[0], p, offset[0]))

    def _to_value(self, state):
        prec, _ = self.precision.expect(state)
        m1 = form_mean(state, self.mean)
        if not self.dim:
            return stack_last(prec * m1, -0.5 * prec)
        return pack(np.einsum("...ij,...j->...i", prec, m1), -0.5 * prec)

    def _to_mean_read(self, state, access):
        prec, _ = self.precision.expect(state)
        y1, _ = self._value(state)
        return read_message(state, self.mean, access, prec, y1, self.factor)


JITTERS = (1e-6, 1e-5, 1e-4, 1e-3)  # of the mean variance, tried in turn by `covariance_to_precision`


def to_precision(value, role: str):
    """The precision a constant given as `role` (`precision`, `sd`, `var` or `cov`) stands for."""
    if role == "sd":
        return 1.0 / value ** 2
    if role == "var":
        return 1.0 / value
    return covariance_to_precision(value)[0] if role == "cov" else value


def covariance_to_precision(cov: np.ndarray) -> tuple:
    """(Σ⁻¹, log|Σ⁻¹|) through a Cholesky factor of Σ + jitter·I, jitter = 1e-6 of the mean
    variance (raised by factors of 10 up to 1e-3 if needed), as GP libraries do: a kernel matrix
    of close inputs is numerically singular, and without the floor its inverse has a condition
    number near 1e17 and an ELBO dominated by round-off. The log-determinant is the factor's
    (an LU of Σ⁻¹ for it cost as much again: 16 ms at D = 1,000)."""
    cov = np.asarray(cov, dtype=float)
    scale = np.mean(np.diagonal(cov, axis1=-2, axis2=-1))
    eye = np.eye(cov.shape[-1])
    for jitter in JITTERS:
        try:
            chol = np.linalg.cholesky(cov + jitter * scale * eye)
        except np.linalg.LinAlgError:
            continue
        return inverse_of_factor(chol), -chol_logdet(chol)
    raise Unsupported("a covariance matrix is not positive definite, even with jitter")


def _diagonal_precision(expr, role: str, owner) -> np.ndarray | None:
    """The diagonal (D,) of a constant precision or covariance that is diagonal by construction
    (ppl.infer.diagonal) and positive; None otherwise. A covariance gets the jitter that
    `covariance_to_precision` adds, so both paths give the same precision."""
    diagonal = constant_diagonal(expr, owner.plate) if role in ("precision", "cov") else None
    if diagonal is None or not np.all(diagonal > 0):
        return None
    if role == "cov":
        return 1.0 / (diagonal + JITTERS[0] * np.mean(diagonal))
    return diagonal


class _Precision:
    """The precision argument: a constant, or a scaled read of a Gamma / Wishart variable,
    a Gamma scalar times a fixed matrix (`alpha * eye(D)`), or `diag(alpha)` (ARD)."""

    def __init__(self, owner: GaussianFactor, role: str, expr, model):
        self.owner = owner
        self.access = None
        self.kind = "const"
        self.scale = 1.0
        self.matrix = None
        self.diagonal = None  # a constant diagonal precision matrix, as its diagonal (D,)
        self._value = None
        dim = owner.dim
        latent = [n.id for n in ast.walk(expr) if isinstance(n, ast.Name)
                  and model.variables.get(n.id) is not None and model.variables[n.id].kind == "latent"]
        if not latent:
            self.diagonal = _diagonal_precision(expr, role, owner) if dim else None
            if self.diagonal is not None:  # D numbers: the D × D matrix only if a caller asks for it
                self.logdet = np.broadcast_to(np.sum(np.log(self.diagonal)), owner.builder.shape())
                return
            value, logdet = covariance_to_precision(owner.data(expr)) if role == "cov" else \
                (to_precision(owner.data(expr), role), None)
            event = (dim, dim) if dim else ()
            self._value = np.broadcast_to(value, owner.builder.shape() + event)
            if dim and np.ndim(value) == 2:
                self.diagonal = diagonal_of(value)
            if logdet is None:  # once: the precision is fixed
                logdet = (np.sum(np.log(self.diagonal)) if self.diagonal is not None and np.all(self.diagonal > 0)
                          else np.linalg.slogdet(value)[1] if dim else np.log(value))
            self.logdet = np.broadcast_to(logdet, owner.builder.shape())
            return
        if role != "precision":
            raise Unsupported(f"a latent `{role}` in `{owner.name}`: use `precision` for conjugate updates",
                              expr.span)
        self._parse(expr, model, dim)

    def _parse(self, expr, model, dim):
        owner = self.owner
        if isinstance(expr, ast.BinOp) and expr.op == "*":
            for latent_side, data_side in ((expr.left, expr.right), (expr.right, expr.left)):
                if not any(isinstance(n, ast.Name) and model.variables.get(n.id) is not None
                           and model.variables[n.id].kind == "latent" for n in ast.walk(data_side)):
                    value = owner.data(data_side)
                    if dim and np.ndim(value) >= 2 and value.shape[-2:] == (dim, dim):
                        self.matrix = value if self.matrix is None else self.matrix * value
                    else:
                        self.scale = self.scale * value
                    return self._parse(latent_side, model, dim)
        if isinstance(expr, ast.Call) and expr.func == "diag" and dim and isinstance(expr.args[0], ast.Name):
            self.kind, self.eye = "diag", np.eye(dim)  # E[diag(alpha)] = alpha ∘ I every sweep: I made once
            self.access = owner.add_read(_WholeVector(expr.args[0].id, dim, owner.builder.shape()))
            return
        if isinstance(expr, (ast.Name, ast.Index)):
            access = owner.builder.build(expr)
            family = model.variables[access.name].dist
            self.access = owner.add_read(access)
            if family == "Wishart" and dim:
                self.kind = "wishart"
            elif family == "Gamma" and not dim:
                self.kind = "gamma"
            elif family == "Gamma" and dim and self.matrix is not None:
                self.kind = "gamma-matrix"
                self.logdet = np.linalg.slogdet(self.matrix)[1]  # of the fixed matrix: once, not every sweep
            else:
                raise Unsupported(f"precision `{ast.text(expr)}` ({family}) is not conjugate here", expr.span)
            return
        raise Unsupported(f"the engine cannot run precision `{ast.text(expr)}` yet", expr.span)

    @property
    def value(self) -> np.ndarray:
        """The constant precision, plate + (C,) [+ (D, D)]; a diagonal one is made dense on first use."""
        if self._value is None:
            self._value = np.broadcast_to(np.diag(self.diagonal), self.owner.builder.shape() + self.diagonal.shape * 2)
        return self._value

    def expect(self, state):
        """(E[precision], E[log precision]) with log-determinants for matrices."""
        s = self.scale
        if self.kind == "const":
            return self.value, self.logdet
        m = self.access.gather(state.moments(self.access.name))
        if self.kind == "gamma":
            return s * m[..., 1], np.log(s) + m[..., 0]
        d = self.owner.dim
        if self.kind == "wishart":
            return expand(expand(s)) * m[..., : d * d].reshape(m.shape[:-1] + (d, d)), d * np.log(s) + m[..., d * d]
        if self.kind == "gamma-matrix":
            return expand(expand(s * m[..., 1])) * self.matrix, d * (np.log(s) + m[..., 0]) + self.logdet
        alpha, log_alpha = m[..., 1], m[..., 0]  # diag: (plate, C, D)
        return expand(expand(s)) * alpha[..., None] * self.eye, (np.log(s) + log_alpha).sum(-1)

    def expected_inverse(self, state):
        """E[precision⁻¹]: a constant's inverse; rate/(shape − 1)/s for s·τ with τ ~ Gamma(shape,
        rate) (∞ when shape ≤ 1); S⁻¹/(ν − D − 1)/s for s·Λ with Λ ~ Wishart(ν, S) (∞ when
        ν ≤ D + 1). None for the other kinds."""
        d = self.owner.dim
        if self.kind == "const":
            return np.linalg.inv(self.value) if d else 1.0 / self.value
        if self.kind not in ("gamma", "wishart") or bool(d) != (self.kind == "wishart"):
            return None
        p = state.families[self.access.name].params(self.access.gather(state.natural[self.access.name]))
        if self.kind == "gamma":
            spare = p["shape"] - 1
            return np.where(spare > 0, p["rate"] / np.where(spare > 0, spare, 1.0), np.inf) / self.scale
        spare = (p["dof"] - d - 1)[..., None, None]
        return np.where(spare > 0, np.linalg.inv(p["scale"]) / np.where(spare > 0, spare, 1.0), np.inf) \
            / expand(expand(self.scale))

    def message(self, state, err):
        s = self.scale
        d = self.owner.dim
        if self.kind == "gamma":
            return stack_last(0.5 + 0 * err, -0.5 * s * err)
        if self.kind == "wishart":
            scaled = -0.5 * expand(expand(s)) * err
            half = np.full(err.shape[:-2] + (1,), 0.5)
            return np.concatenate([scaled.reshape(err.shape[:-2] + (d * d,)), half], axis=-1)
        if self.kind == "gamma-matrix":
            trace = np.einsum("...ij,...ji->...", self.matrix, err)
            return stack_last(0.5 * d + 0 * trace, -0.5 * s * trace)
        diagonal = err.diagonal(axis1=-2, axis2=-1)  # diag: message per coordinate of alpha
        return stack_last(0.5 + 0 * diagonal, -0.5 * expand(s) * diagonal)


class _WholeVector:
    """A read of every element of a vector-shaped Gamma variable (`diag(alpha)` in ARD)."""

    def __init__(self, name: str, dim: int, shape: tuple):
        self.name = name
        self.dim = dim
        self.shape = shape
        self.selector = None

    def gather(self, moments):
        return np.broadcast_to(moments, self.shape + moments.shape)

    def scatter_weighted(self, message, weights, factored=False):
        w = weights.reshape(weights.shape + (1,) * (message.ndim - weights.ndim))
        return (message * w).reshape(-1, self.dim, message.shape[-1]).sum(axis=0)
