"""Batch VMP on a cluster: the engine's loop (`engine._run_once`) with the sweep's E-step where the
data are (`OnPartitions`, the engine's `InProcess` answered by rounds).

A sweep is the engine's `batch_sweep`: every global once by the update equation (ρ = 1), then
every local. The globals' messages from the data are sums over groups, so each partition sends
its own sums and the cluster adds them up (`ClusterSource.round`); the client adds the priors'
messages and updates the globals. Globals whose data messages read a global updated before them
in the same sweep (mu then Lambda without `@joint`) wait for a round of their own (`waves`).
The E-step round returns the ELBO's local terms and the first wave's messages of the next sweep,
so that a sweep of a model with one wave (a mixture with `@joint`, LDA) is one round.

Start: the globals from a batch fit of a sample of groups scaled to all of them (SVI's start:
a start that does not need all the data in one place), then each partition's locals from their
priors and one E-step sweep (`start_at`). From the same start, one process gives the same
trace (tests/test_cluster.py). A model with no locals starts where one process starts
(`initialise`): the sample's fit is there to settle locals, and for a non-conjugate likelihood
its undamped sweeps could stop anywhere on an oscillation (an ELBO of -1.5e7 against -511).

SQUAREM (ppl.infer.accelerate) extrapolates the globals only: after a move the partitions refit
their locals by one E-step, keeping those before it (`worker.refit_task`), and a rejected step puts
them back (`worker.restore_task`), so the sweep from an extrapolated point is the one-process sweep
with every local refitted. Anderson's vectors would hold every local: refused (E369).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ppl.cluster import worker
from ppl.diagnostics import OptionError
from ppl.infer.accelerate import accelerator
from ppl.infer.initialise import initialise
from ppl.infer.schedule.plan import plan_for
from ppl.infer.schedule.steps import data_factors, random_globals
from ppl.infer.ridges import shift_after_update
from ppl.infer.update import update

START_GROUPS = 1000  # groups of the sample the starting globals are fitted to


def start_globals(problem, rng, source, groups: int = START_GROUPS) -> dict:
    """Natural parameters of the globals after SVI's start on `groups` groups of `source` (a
    `GroupedSource` or a `ClusterSource`: the same groups, the same globals)."""
    from ppl.infer.schedule.svi import SVI
    spec = replace(problem.schedule, batch=min(groups, source.groups))
    svi = SVI(replace(problem, schedule=spec), rng, source)
    svi.start()
    return svi.globals


def waves(problem, plan, data: set) -> list:
    """The globals in update order, cut where a global's data messages read a global of the
    current wave (its message must wait for that update)."""
    out, current = [], []
    for name in (n for n in problem.order if n in plan.globals):
        reads = {r for f in problem.neighbours[name] if f.name in data for r in f.reads}
        if current and reads & set(current):
            out.append(current)
            current = []
        current.append(name)
    return out + [current] if current else out


def global_terms(problem, state, plan, data: set) -> tuple:
    """(ELBO terms the client holds: the globals' priors and entropies, their squared se)."""
    pairs = [f.elbo_estimate(state) for f in problem.factors if f.name not in data]
    value = sum(p[0] for p in pairs) + sum(state.entropy(n) for n in plan.globals)
    return float(value), float(sum(p[1] ** 2 for p in pairs))


def _refuse_blocks(problem) -> None:
    """The Gaussian blocks a cluster cannot run: one with a Gamma member, whose step is searched on
    the block's ELBO terms, held by the partitions (E634); one with group effects, whose arrow holds
    every group while each partition binds its own (E635)."""
    from ppl.diagnostics import ModelError
    for block in problem.analysis.gaussian:
        family = problem.families.get(block.key)
        if family is None:  # left in mean field
            continue
        if block.key in problem.searched:
            member = block.logs(problem.model)[0]
            raise ModelError("E634", f"the Gaussian block {block.key} has Gamma member `{member}`: its searched "
                             "Newton step runs in one process, not on a cluster",
                             span=problem.model.variables[member].span,
                             hint=f"run in one process, or leave `{member}` out of the block (its Gamma q)")
        local = [m for m, place in family.placements.items() if place.local]
        if local:
            raise ModelError("E635", f"the Gaussian block {block.key} holds the group effects `{local[0]}`: its "
                             "arrow-shaped q spans every group, which a cluster's partitions split",
                             span=problem.model.variables[local[0]].span,
                             hint=f"run in one process, or leave `{local[0]}` out of the block (a block of the "
                                  "global variables runs on a cluster)")


class OnPartitions:
    """Where a batch run's sweeps take place on a cluster (`engine.InProcess`'s questions, answered
    by rounds): the client holds the globals, each partition its locals; the engine's loop does the
    rest (damping, the decrease check, SQUAREM, the stopping rule, progress, the time limit)."""

    whole = False  # the client binds a few groups: no replay of a decrease, no per-sweep terms, no diagnostics

    def __init__(self, problem, cluster):
        _refuse_blocks(problem)
        self.problem, self.cluster = problem, cluster
        self.plan = plan_for(problem.model, problem.scopes, problem.latent, problem.schedule.span,
                             problem.analysis.chains)
        self.data = data_factors(problem, self.plan)
        self.order = waves(problem, self.plan, self.data)
        self.first = self.order[0] if self.order else []
        self.state = self.reply = self.plain = None
        self.rebuilt, self.opened = 0, False

    def start(self, options, rng) -> tuple:
        """The globals from a sample's fit (or, with no locals, where one process starts), each
        partition's locals from them; (the state, the ELBO)."""
        problem, plan = self.problem, self.plan
        globals_ = start_globals(problem, rng, self.cluster, START_GROUPS) if plan.locals else {}  # none: `initialise`'s
        state = self.state = initialise(problem, rng)
        if problem.schedule.init == "random":  # as the engine's `random_start`, after its initial state
            globals_.update(random_globals(problem, plan.globals, rng))
        for name, natural in globals_.items():
            state.set(name, natural.copy())
        self.cluster.open_run(problem.analysis, problem.schedule, int(rng.integers(2 ** 62)))
        self.opened = True
        self.reply = self.cluster.round(worker.start_task, _globals(state, plan), self.first)  # every partition bound
        return state, global_terms(problem, state, plan, self.data)[0] + self.reply.elbo

    def accelerator(self, options):
        """SQUAREM on the globals (module docstring); Anderson's step would extrapolate every local."""
        if options.accelerate == "anderson":
            raise OptionError("E369", "Anderson acceleration (--accelerator anderson) on a cluster: its step "
                                      "extrapolates every local, and the locals are in the partitions",
                              hint="use SQUAREM (the default)")
        return accelerator(self.problem, options.accelerate, names=list(self.plan.globals), refit=False)

    def sweep(self, state, step) -> tuple:
        """The globals wave by wave from the partitions' summed messages, then every partition's
        E-step; (the ELBO, its standard error)."""
        problem, plan = self.problem, self.plan
        for k, wave in enumerate(self.order):
            if k:
                self.reply = self._round(worker.messages_task, wave)
            for name in wave:
                update(problem, state, name, step(name), received=(self.data, self.reply.messages[name]))
                shift_after_update(problem, state, name)
        self.reply = self._round(worker.estep_task, {n: step(n) for n in plan.locals}, self.first)
        value, se2 = global_terms(problem, state, plan, self.data)
        return value + self.reply.elbo, float(np.sqrt(se2 + self.reply.se2))

    def moved(self, state) -> None:
        """The partitions refit their locals at the extrapolated globals (module docstring)."""
        self.plain = self.reply  # the first wave's messages at the plain point, where a rejected step returns
        self.reply = self._round(worker.refit_task, self.first)

    def rejected(self, state) -> None:
        """Back at the plain point: its messages, and each partition's locals."""
        self.reply = self.plain
        if self.plan.locals:
            self._round(worker.restore_task)

    def local_change(self) -> tuple:
        """The locals' largest mean change, from the partitions."""
        return self.cluster.round(worker.change_task, _globals(self.state, self.plan)).change

    def not_finite(self, state) -> Exception:
        return self.problem.not_finite_at(self.reply.bad)

    def finish(self, state, trace: list, trace_se: list, notes: list) -> tuple:
        """(the last ELBO, no terms: they are summed where the partitions are); the locals of the
        client's few groups are not the posterior's."""
        for name in self.plan.locals:
            state.natural.pop(name, None)
        notes.append(f"cluster: batch VMP over {self.cluster.partitions} partitions of {self.cluster.groups} groups "
                     f"of {self.plan.group_dim}, E-steps where the partitions are; the posterior holds the globals only"
                     + (f"; {self.rebuilt} partition state(s) rebuilt from the data and the globals after a lost "
                        "worker" if self.rebuilt else ""))
        return trace[-1], {}

    def close(self) -> None:
        if self.opened:
            self.cluster.close_run()

    def _round(self, task, *args):
        """One round of `task` at the current globals; counts the partitions it rebuilt."""
        reply = self.cluster.round(task, _globals(self.state, self.plan), *args)
        self.rebuilt += reply.rebuilt
        return reply


def _globals(state, plan) -> dict:
    return {n: state.natural[n] for n in plan.globals}
