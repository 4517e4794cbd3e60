"""SVI and SSMF on a cluster: `SVI`'s steps with each minibatch's E-step where its groups are.

Step t takes the same groups as in one process (`Minibatches`); each partition fits the locals
of its share of them at the step's globals (drawn from q and pinned under SSMF) and sends the
ELBO's local terms and its data messages; the client adds the priors' and moves the globals by
the same `global_step`. SSMF's eq. 26 is linear in the counts, so it applies to their sum.
The start and the posterior's frame are bound on the client from a few groups (`take`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ppl.cluster import worker
from ppl.cluster.batch import global_terms, waves
from ppl.infer.initialise import initialise
from ppl.infer.schedule.sampled import pin_draws, ssmf_message, unpin
from ppl.infer.schedule.steps import data_factors, global_step
from ppl.infer.schedule.svi import SVI, step_size


class ClusterSVI(SVI):
    """`SVI` over a `ClusterSource`."""

    def __init__(self, problem, rng, source):
        super().__init__(problem, rng, source)
        self.data = data_factors(problem, self.plan)
        self.waves = waves(problem, self.plan, self.data)
        self.state = initialise(problem, np.random.default_rng(0))  # the client's globals
        source.open_run(problem.analysis, self.spec, int(rng.integers(2 ** 62)))

    def _sync(self) -> None:
        for name, natural in self.globals.items():
            self.state.set(name, natural)

    def step(self, t: int) -> float:
        groups = self.batches.next()
        source, state, names = self.groups, self.state, self.plan.globals
        self._sync()
        sampled = self.spec.name in ("ssmf", "ssmf_a")
        draws = pin_draws(state, names, self.rng, self.spec.name == "ssmf") if sampled else None
        sent = {n: (state.natural[n], state.moments(n)) if sampled else state.natural[n] for n in names}
        owners = source.owner[groups]
        only = {int(p): source.local[groups[owners == p]] for p in np.unique(owners)}
        first = self.waves[0] if self.waves else []
        reply = source.round(worker.svi_task, sent, first, only=only)
        if sampled:
            unpin(state, names)
        value = global_terms(self.problem, state, self.plan, self.data)[0] + self.groups.groups / len(groups) * reply.elbo
        if not np.isfinite(value):  # as a batch sweep's (`SVI.step`)
            raise self.problem.not_finite_at(reply.bad)
        seen = min(t * len(groups), self.groups.groups) if self.spec.ramp else self.groups.groups
        rho = step_size(self.spec, t)
        for k, wave in enumerate(self.waves):
            if k:
                reply = source.round(worker.svi_task, sent, wave, only=only, current=self._current())
            for name in wave:
                transform = partial(ssmf_message, draw=draws[name]) if self.spec.name == "ssmf" else None
                global_step(self.problem, state, name, seen / len(groups), rho, self.data, transform,
                            observed=reply.messages[name])
                self.globals[name] = state.natural[name]
        return value

    def _current(self) -> dict:
        return {n: self.state.natural[n] for n in self.plan.globals}

    def streamed_elbo(self) -> tuple:
        """(ELBO, state of the globals): every partition's locals fitted at the final globals,
        their terms summed on the cluster; the globals' terms on the client."""
        self._sync()
        try:
            reply = self.groups.round(worker.locals_task, self._current())
        finally:
            self.groups.close_run()
        return global_terms(self.problem, self.state, self.plan, self.data)[0] + reply.elbo, self.state
