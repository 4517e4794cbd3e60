"""The `schedule` statement: how a run visits the groups of the data and moves the globals.

    schedule batch                           every group each step, globals by plain VMP (the default)
    schedule svi(batch=64, kappa=0.7)        minibatches of 64 groups, mean-field natural-gradient steps
    schedule ssmf(batch=64, estep=gibbs)     the locals' exact conditional given sampled globals (Hoffman 2014)
    schedule cvi(minibatch=64, step=0.5)     doubly stochastic CVI (Khan & Lin Alg. 2, eq. 14): the
                                             options and the step β·t^−κ of `@cvi(minibatch=64)`
    schedule batch(inner=30, init=random)    every group, its locals refitted from the prior each sweep,
                                             from random topics (Blei et al. 2003; scikit-learn's LDA)

The same text after `--schedule` on the command line (`--schedule 'svi(batch=64)'`) or as
`schedule=` in `Model.infer` overrides the model file's. This module is the vocabulary and
its checks; what a schedule does is `ppl.infer.schedule`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ppl.diagnostics import ModelError, nearest
from ppl.lang import ast

# M-steps: batch (ρ = 1, every group), svi (Hoffman et al. 2013), ssmf and ssmf_a (Hoffman 2014,
# Alg. 1 and 2: the step through globals sampled from q), cvi (Khan & Lin's Alg. 2 with a
# minibatch: SVI's step with ρ_t = β·t^−κ and the exact scale N/|B|)
SCHEDULES = ("batch", "svi", "ssmf", "ssmf_a", "cvi")
ESTEPS = ("vmp", "gibbs", "cvb0")
INITS = ("data", "random")  # globals from the locals' first responsibilities, or drawn at random
STOCHASTIC_OPTIONS = ("batch", "kappa", "tau", "ramp", "passes")
LOCAL_OPTIONS = ("inner", "local_tol", "init", "estep")
OPTIONS = {"batch": LOCAL_OPTIONS + ("warm",), "svi": STOCHASTIC_OPTIONS + LOCAL_OPTIONS,
           "ssmf": STOCHASTIC_OPTIONS + LOCAL_OPTIONS, "ssmf_a": STOCHASTIC_OPTIONS + LOCAL_OPTIONS,
           "cvi": ("minibatch", "step", "kappa", "passes") + LOCAL_OPTIONS}


@dataclass(frozen=True)
class ScheduleSpec:
    """A checked schedule. Step t (1, 2, ...) takes `batch` groups, fits their local blocks for
    at most `inner` sweeps (until the largest change of a local mean parameter is below
    `local_tol`), then moves each global by ρ_t = (tau + t)^−kappa towards η + (N_t/|B|) Σ m_n,
    with N_t = min(t·|B|, N) when `ramp` (Hoffman 2014) and N_t = N otherwise; `cvi` writes
    `minibatch` for `batch` and steps by ρ_t = step·t^−kappa (tau = 0, no ramp). `init=random`
    draws the Dirichlet globals' concentrations from Gamma(100, 1/100) (scikit-learn's LDA) and
    fits the locals to them before the first step; `warm` (batch) carries the locals from sweep
    to sweep instead of refitting them from the prior."""

    name: str = "batch"
    batch: int | None = None  # groups per step; None: all of them
    kappa: float = 0.7
    tau: float = 1.0
    step: float = 1.0  # β of ρ_t = β·(tau + t)^−kappa: `cvi` only
    ramp: bool = True
    passes: float | None = None  # passes over the groups at most (stochastic schedules)
    inner: int | None = None  # E-step sweeps at most; default 1 in batch, 100 in a stochastic schedule
    local_tol: float = 1e-3
    estep: str = "vmp"  # vmp: mean field on the block; gibbs: its exact conditional, by sampling; cvb0: collapsed
    init: str | None = None  # None: "data", or "random" for a Dirichlet–Categorical block (ppl.infer.schedule.blocks)
    warm: bool | None = None  # batch: locals carried over; None: when they are updated once a sweep
    span: object = None
    given: frozenset | None = field(default=None, compare=False)  # options written out (parsed); None: all

    @property
    def stochastic(self) -> bool:
        return self.name != "batch"

    @property
    def local_sweeps(self) -> int:
        """Batch VMP carries the local blocks from sweep to sweep and updates them once (an inner
        loop from the first, nearly uniform topics locks LDA into a worse optimum: -76304 against
        -71645 on models/lda); a minibatch step fits fresh blocks to convergence."""
        if self.inner is not None:
            return self.inner
        return 100 if self.stochastic else 1

    @property
    def restarted(self) -> bool:
        """The locals refitted from the prior at every visit: always in a minibatch step, in batch
        unless `warm` (by default when the E-step has an inner loop)."""
        if self.stochastic:
            return True
        return not self.warm if self.warm is not None else self.local_sweeps > 1

    def describe(self) -> str:
        local = (f"local blocks to convergence (≤ {self.local_sweeps} sweeps)" if self.local_sweeps > 1
                 else "local blocks once")
        if self.local_sweeps > 1 and not self.stochastic:
            local += ", from the prior each sweep" if self.restarted else ", carried over"
        if self.init == "random":
            local += ", random initial globals"
        if self.passes is not None:
            local += f", {self.passes:g} passes"
        if not self.stochastic:
            return f"batch: every group each sweep, {local}"
        step = (f"step size step·t^-kappa = {self.step:g}·t^-{self.kappa:g}" if self.name == "cvi" else
                f"step (tau + t)^-kappa = ({self.tau:g} + t)^-{self.kappa:g}")
        return (f"{self.name.replace('_', '-')}: minibatches of {self.batch} groups, E-step {self.estep}, "
                f"{step}, " + ("N_t ramp, " if self.ramp else "") + local)


_CHECKS = {
    "batch": (lambda v: isinstance(v, int) and v >= 1, "a positive integer"),
    "kappa": (lambda v: 0.5 < v <= 1, "in (0.5, 1] (Robbins–Monro)"),
    "tau": (lambda v: v >= 0, "at least 0"),
    "ramp": (lambda v: v in (0, 1), "0 or 1"),
    "passes": (lambda v: v > 0, "positive"),
    "inner": (lambda v: isinstance(v, int) and v >= 1, "a positive integer"),
    "local_tol": (lambda v: v > 0, "positive"),
    "estep": (lambda v: v in ESTEPS, " or ".join(ESTEPS)),
    "init": (lambda v: v in INITS, " or ".join(INITS)),
    "warm": (lambda v: v in (0, 1), "0 or 1"),
    "minibatch": (lambda v: isinstance(v, int) and v >= 1, "a positive integer"),
    "step": (lambda v: 0 < v <= 1, "in (0, 1]"),
}
CVI_STEP, CVI_KAPPA = 1.0, 0.6  # ρ_t = β·t^−κ of `@cvi` and `schedule cvi` by default
CVI_CHECKS = {"kappa": (lambda v: 0 <= v <= 1, "in [0, 1] (0: a constant step)")}  # as `@cvi(kappa=...)`
WORDS = ("estep", "init")  # options whose value is a name


def parse_schedule(text: str) -> ScheduleSpec:
    """`svi(batch=64)` as given to `--schedule` or `Model.infer(schedule=...)`."""
    from ppl.lang.parser import parse
    program = parse(f"schedule {text}", "--schedule")
    found = [i for i in program.items if isinstance(i, ast.Schedule)]
    if len(found) != 1 or len(program.items) != 1:
        raise ModelError("E295", f"--schedule takes one schedule such as `svi(batch=64)`, not `{text}`")
    return schedule_spec(found[0])


def check_schedule(items) -> ScheduleSpec | None:
    """The program's `schedule` statement, checked; None when it has none."""
    found = [i for i in items if isinstance(i, ast.Schedule)]
    if len(found) > 1:
        raise ModelError("E290", "a model takes one `schedule` statement", span=found[1].span)
    return schedule_spec(found[0]) if found else None


def schedule_spec(item: ast.Schedule) -> ScheduleSpec:
    if item.name not in SCHEDULES:
        guess = nearest(item.name, SCHEDULES)
        raise ModelError("E291", f"unknown schedule `{item.name}`", span=item.span, expected=", ".join(SCHEDULES),
                         hint=f"did you mean `{guess}`?" if guess else None)
    values = {}
    for key, value in item.options:
        if key not in OPTIONS[item.name]:
            raise ModelError("E292", f"schedule `{item.name}` has no option `{key}`", span=value.span,
                             expected=", ".join(OPTIONS[item.name]))
        test, wanted = (CVI_CHECKS if item.name == "cvi" else {}).get(key, _CHECKS[key])
        number = value.value if isinstance(value, ast.Number) else value.id if key in WORDS and \
            isinstance(value, ast.Name) else None
        if number is None or not test(number):
            raise ModelError("E293", f"schedule option `{key}` must be {wanted}", span=value.span)
        values[key] = bool(number) if key in ("ramp", "warm") else number
    if item.name == "batch" and values.get("estep") == "gibbs":
        raise ModelError("E298", "`estep=gibbs` samples the locals given globals drawn from q: a batch sweep draws "
                         "none", span=item.span, hint="write `schedule ssmf(batch=64, estep=gibbs)`")
    if item.name == "cvi":  # the step of `@cvi`: β·t^−κ, and eq. 14's exact N/|B|
        values = {"batch": values.pop("minibatch", None), "tau": 0.0, "ramp": False, "kappa": CVI_KAPPA,
                  "step": CVI_STEP, **values}
    size = "minibatch" if item.name == "cvi" else "batch"
    if item.name != "batch" and values.get("batch") is None:
        raise ModelError("E294", f"schedule `{item.name}` needs a minibatch size", span=item.span,
                         hint=f"write `schedule {item.name}({size}=64)`: 64 groups per step")
    return ScheduleSpec(item.name, span=item.span, given=frozenset(values), **values)
