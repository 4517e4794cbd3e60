"""The local/global split that a schedule runs on: which plate's elements own the local blocks
(the group plate), which data column assigns rows to groups, and which variables are global.

Found from the analyzer's scopes: a local variable has a plate that grows with the data, the
rows or the levels of a categorical column used as an index. Documents in LDA (`theta[doc[t]]`),
groups in a hierarchical regression (`a[site[n]]`) and rows in a mixture (`z[n]`) are groups.
"""

from __future__ import annotations

from dataclasses import dataclass

from ppl.infer.access import Unsupported
from ppl.infer.factors.joint import key_variable


@dataclass(frozen=True)
class Plan:
    """Group plate `group_dim` (its rows found through the cat column `group_column`, or the
    rows themselves when None), row dimension `row_dim`, and the latent variables by scope."""

    group_dim: str
    group_column: str | None
    row_dim: str
    globals: tuple
    locals: tuple

    def describe(self) -> str:
        by = f"the levels of `{self.group_column}`" if self.group_column else "the rows"
        return (f"group plate {self.group_dim} ({by}); globals {', '.join(self.globals) or 'none'}; "
                f"locals {', '.join(self.locals) or 'none'}")


def plan_for(model, scopes: dict, latent: list, span=None, chains=()) -> Plan:
    """The plan of `model` whose latent variables (ordered as the engine updates them) are
    `latent`, with their `scopes` (`Problem.scopes`); a located error when its local variables
    sit on two different group plates. A chain over several sequences (`@sequences(by=seq)`,
    the analyzer's `chains`) makes its sequences the groups: a step never cuts a chain."""
    rows = next((n for n, s in model.sizes.items() if s.origin == "rows"), None)
    if rows is None:
        raise Unsupported("a schedule needs data rows to group: this model reads no data column", span)
    local = tuple(n for n in latent if scopes.get(n, ("local",) if n in model.data else ("global",))[0] == "local")
    globals_ = tuple(n for n in latent if n not in local)
    groups = {d for n in local for d in _plates(model, n)
              if d != rows and model.sizes.get(d) is not None and model.sizes[d].origin == "levels"}
    whole = [c.variable for c in chains if c.variable in local and not getattr(c, "sequences", None)]
    if whole:
        raise Unsupported(f"`{whole[0]}` is one chain over all the rows: a minibatch of rows would cut it; "
                          "give it several sequences (`@sequences(by=seq)`) to visit them by groups", span)
    groups |= {model.variables[c.sequences].levels for c in chains
               if getattr(c, "sequences", None) and c.variable in local}
    if len(groups) > 1:
        raise Unsupported(f"the local variables sit on two group plates ({', '.join(sorted(groups))}); a "
                          "schedule visits one", span)
    if not groups:
        return Plan(rows, None, rows, globals_, local)
    dim = groups.pop()
    return Plan(dim, model.sizes[dim].data, rows, globals_, local)


def _plates(model, name: str) -> tuple:
    """Plates of a variable, or of the mean of a `@joint` group keyed `(mu, Lambda)`."""
    return model.variables[key_variable(name)].plates


def schedule_report(model, scopes: dict, spec, chains=()) -> dict:
    """What `ppl check` says of the schedule: its description, and the plan it would run on."""
    from ppl.lang.schedule import ScheduleSpec
    spec = spec or model.schedule or ScheduleSpec()
    latent = [n for n, v in model.variables.items() if v.kind == "latent"]
    report = {"name": spec.name, "description": spec.describe(), "estep": spec.estep,
              "mstep": spec.name.replace("_", "-")}
    try:
        plan = plan_for(model, scopes, latent, spec.span, chains)
    except Unsupported as exc:
        if spec.stochastic:
            raise
        report["plan"] = f"no minibatch schedule: {exc.message}"
        return report
    report.update(plan=plan.describe(), group_plate=plan.group_dim, group_column=plan.group_column,
                  globals=list(plan.globals), locals=list(plan.locals))
    return report
