"""What runs on a Dask worker: the tasks of a cluster run, each on one partition.

A task's inputs are the partition (`Partition`, a Dask future: its data bound to the levels of
all the data, recomputed from the files by Dask if its worker dies) and the current globals.
The partition's locals stay on the worker between rounds, in the run's `PartitionStates` (a
worker plugin), tagged with the round that left them. A task that finds no state of the round
before (a worker that replaced a lost one, or a task Dask ran elsewhere) rebuilds it from the
data and the globals it was given (`start_at`): nothing is lost with a worker, and no state
travels. Futures of per-partition states would chain each sweep's state to the last, so that
Dask would recompute a lost one by replaying the whole run (keeping every sweep's globals for
that); actors are not restarted with their worker.

Every task returns a `Reply` (messages to the globals, the ELBO's local terms, the largest
change of a local mean): replies add up, in a tree of Dask tasks, to what the client needs.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from functools import reduce

import numpy as np
from distributed import get_worker
from distributed.diagnostics.plugin import WorkerPlugin

from ppl.data.stream import GroupedSource
from ppl.infer.build import build_problem
from ppl.infer.convergence import mean_change
from ppl.infer.initialise import initialise
from ppl.infer.schedule.plan import plan_for
from ppl.infer.schedule.steps import batch_e_step, data_factors, data_message, estep_order, start_at
from ppl.infer.schedule.svi import minibatch_e_step


class PartitionStates(WorkerPlugin):
    """The locals of the partitions one worker holds, for one run (`name`)."""

    def __init__(self, name: str):
        self.name = name
        self.held: dict = {}

    def setup(self, worker) -> None:
        self.held = {}

    def teardown(self, worker) -> None:
        self.held.clear()


@dataclass
class Partition:
    """One partition's data (a `Dataset` of whole groups) and what it takes to bind the model."""

    index: int
    dataset: object
    model: object
    analysis: object
    spec: object
    group: str | None


@dataclass
class Reply:
    """What one or more partitions send back: Σ data messages by global, Σ local ELBO terms
    (and their squared standard errors), the largest local mean change, partitions rebuilt,
    the first factor whose term is not finite."""

    messages: dict = field(default_factory=dict)
    elbo: float = 0.0
    se2: float = 0.0
    change: tuple = (0.0, "")
    rebuilt: int = 0
    bad: str | None = None
    where: dict = field(default_factory=dict)  # partition -> the worker that holds its state

    def __add__(self, other: "Reply") -> "Reply":
        names = list(self.messages) + [n for n in other.messages if n not in self.messages]
        return Reply({n: self.messages.get(n, 0) + other.messages.get(n, 0) for n in names},
                     self.elbo + other.elbo, self.se2 + other.se2, max(self.change, other.change),
                     self.rebuilt + other.rebuilt, self.bad or other.bad, {**self.where, **other.where})


def combine(*replies: Reply) -> Reply:
    """The sum of replies (one node of the reduction tree)."""
    return reduce(operator.add, replies)


@dataclass
class Held:
    """A partition's bound model and state as the round `tick` left them."""

    problem: object
    state: object
    plan: object
    data: set
    tick: int
    rebuilt: int = 0
    index: int = 0
    before: dict = field(default_factory=dict)  # the locals before the last E-step
    kept: object = None  # the locals before an extrapolated step (`refit_task`), to put back if it is rejected


def _bind(part: Partition, dataset, seed: int, globals_: dict | None = None) -> Held:
    problem = build_problem(part.model, dataset, part.analysis, part.spec)
    plan = plan_for(problem.model, problem.scopes, problem.latent, part.spec.span, problem.analysis.chains)
    rng = np.random.default_rng([seed, part.index])
    state = start_at(problem, rng, globals_, plan) if globals_ is not None else initialise(problem, rng)
    state.rng = rng
    return Held(problem, state, plan, data_factors(problem, plan), -1, 0, part.index)


def _held(part: Partition, run: str, tick: int, seed: int, globals_: dict) -> Held:
    """The partition's state left by round `tick − 1` with the globals set, or rebuilt."""
    table = get_worker().plugins[run].held
    held = table.get(part.index)
    if held is None or held.tick != tick - 1:
        held = table[part.index] = _bind(part, part.dataset, seed, globals_)
        held.rebuilt = 1
    else:
        _set(held.state, globals_)
        held.rebuilt = 0
    held.tick = tick
    return held


def _set(state, globals_: dict) -> None:
    """Globals as natural parameters, or (natural, moments) pinned at a draw (SSMF)."""
    for name, value in globals_.items():
        natural, moments = value if isinstance(value, tuple) else (value, None)
        state.set(name, natural, moments=moments)


def _reply(held: Held, names, terms: bool = True) -> Reply:
    problem, state = held.problem, held.state
    messages = {n: data_message(problem, state, n, held.data) for n in names}
    where = {held.index: get_worker().address}
    if not terms:
        return Reply(messages, rebuilt=held.rebuilt, where=where)
    pairs = [(f.name, f.elbo_estimate(state)) for f in problem.factors if f.name in held.data]
    bad = next((name for name, (value, _) in pairs if not np.isfinite(value)), None)
    elbo = sum(p[0] for _, p in pairs) + sum(state.entropy(n) for n in held.plan.locals)
    return Reply(messages, float(elbo), float(sum(p[1] ** 2 for _, p in pairs)), rebuilt=held.rebuilt, bad=bad,
                 where=where)


def start_task(part: Partition, run: str, tick: int, seed: int, globals_: dict, names) -> Reply:
    """The first round of batch VMP: the locals at the starting globals; the ELBO's local terms
    and the first globals' messages."""
    return _reply(_held(part, run, tick, seed, globals_), names)


def messages_task(part: Partition, run: str, tick: int, seed: int, globals_: dict, names) -> Reply:
    """The data messages to `names` at the current globals (a later wave of the M-step)."""
    return _reply(_held(part, run, tick, seed, globals_), names, terms=False)


def estep_task(part: Partition, run: str, tick: int, seed: int, globals_: dict, steps: dict, names) -> Reply:
    """Batch VMP's E-step on the partition (the engine's: every local, `problem.inner` sweeps),
    then the ELBO's local terms, the locals' largest mean change and the next sweep's first
    messages."""
    held = _held(part, run, tick, seed, globals_)
    problem, state = held.problem, held.state
    held.before = {n: state.natural[n] for n in problem.local}
    batch_e_step(problem, state, lambda name: steps.get(name, 1.0))
    return _reply(held, names)


def refit_task(part: Partition, run: str, tick: int, seed: int, globals_: dict, names) -> Reply:
    """The locals refitted by one E-step to globals moved by SQUAREM (ppl.infer.accelerate), those
    before it kept (`restore_task`); the first globals' messages of the sweep from there."""
    held = _held(part, run, tick, seed, globals_)
    held.kept = held.state.keep(held.problem.local, bare=held.problem.local)
    batch_e_step(held.problem, held.state)
    return _reply(held, names, terms=False)


def restore_task(part: Partition, run: str, tick: int, seed: int, globals_: dict) -> Reply:
    """The locals put back as `refit_task` found them, after a rejected step (the globals are the
    plain point's again). A partition rebuilt in this round has them fitted to those globals
    (`start_at`); one rebuilt since the refit kept nothing, and fits them to those globals here."""
    held = _held(part, run, tick, seed, globals_)
    if held.kept is not None and not held.rebuilt:
        held.state.restore(held.kept)
    elif not held.rebuilt:
        batch_e_step(held.problem, held.state)
    held.kept = None
    return Reply(rebuilt=held.rebuilt, where={part.index: get_worker().address})


def change_task(part: Partition, run: str, tick: int, seed: int, globals_: dict) -> Reply:
    """The largest change of a local's mean in the last E-step, in posterior sds (asked for
    when the ELBO has settled: `Monitor`)."""
    held = _held(part, run, tick, seed, globals_)
    problem, state = held.problem, held.state
    return Reply(change=mean_change(problem, held.before, {n: state.natural[n] for n in problem.local}),
                 rebuilt=held.rebuilt, where={part.index: get_worker().address})


def svi_task(part: Partition, run: str, tick: int, seed: int, groups, globals_: dict, names,
             current: dict | None = None) -> Reply:
    """SVI's E-step on the partition's groups of a minibatch (local indices `groups`) at the
    step's globals (`globals_`, pinned at a draw under SSMF), as `SVI.e_step` does it; then the
    ELBO's local terms and the messages to `names`. Kept for the M-step's later waves, which
    send the `current` globals; a lost state is made again from the same inputs."""
    table = get_worker().plugins[run].held
    held = table.get(part.index)
    if current is None or held is None or held.tick != tick - 1:
        held = _svi_estep(part, seed, groups, globals_)
        table[part.index] = held
    held.tick = tick
    if current is not None:
        _set(held.state, current)
        return _reply(held, names, terms=False)
    return _reply(held, names)


def _svi_estep(part: Partition, seed: int, groups, globals_: dict) -> Held:
    dataset = GroupedSource.from_dataset(part.model, part.dataset, part.group).take(groups)
    held = _bind(part, dataset, seed)
    problem, state, spec = held.problem, held.state, part.spec
    _set(state, globals_)
    minibatch_e_step(problem, state, estep_order(problem, held.plan.locals), spec, state.rng, spec.estep)
    _set(state, {n: v[0] if isinstance(v, tuple) else v for n, v in globals_.items()})  # unpinned
    held.rebuilt = 0
    return held


def locals_task(part: Partition, run: str, tick: int, seed: int, globals_: dict) -> Reply:
    """The ELBO's local terms with the partition's locals fitted at the final globals (SVI's
    last pass over all the data)."""
    spec = part.spec
    held = _bind(part, part.dataset, seed)
    _set(held.state, globals_)
    minibatch_e_step(held.problem, held.state, estep_order(held.problem, held.plan.locals), spec, held.state.rng)
    held.rebuilt = 0
    return _reply(held, ())


def take_task(dataset, model, group, groups) -> object:
    """The `Dataset` of some of a partition's groups (local indices), for the client."""
    return GroupedSource.from_dataset(model, dataset, group).take(groups)


def bind_task(raw, layout, index: int, model, group) -> object:
    """Partition `index` read (`raw`) and bound to the levels of all the data (`layout`, its own
    slice): a `Dataset`."""
    from ppl.data.partitions import bind_partition
    return bind_partition(model, raw, layout, 0)
