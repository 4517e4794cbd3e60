"""Tag every (factor, latent neighbour) edge with the rule the scheduler will run and why;
classify latent variables as global or local; find the blocks of local variables that an E-step fits together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ppl.diagnostics import ModelError, OptionError, nearest
from ppl.graph import forms
from ppl.graph.chain import find_chains
from ppl.graph.components import mixture_components
from ppl.graph.conjugacy import applicable, match
from ppl.graph.gaussian_block import gaussian_blocks
from ppl.graph.joint import joint_groups
from ppl.lang import ast
from ppl.lang.model import CheckedModel, Factor
from ppl.lang.rules import rule_name


@dataclass(frozen=True)
class Tag:
    """The rule for one edge: `factor` sends `variable` messages computed by `rule`."""

    factor: str
    variable: str
    role: str
    form: str
    rule: str
    reason: str
    pair: str | None = None
    candidate: str | None = None
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Block:
    """Local latent variables that depend on each other inside a data plate: an E-step fits them
    together for each group."""

    variables: tuple[str, ...]
    plates: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Analysis:
    tags: tuple[Tag, ...]
    scopes: dict  # latent name -> ("global" | "local", reason)
    blocks: tuple[Block, ...]
    groups: tuple = ()  # joint.Group: variables sharing one factor of q
    chains: tuple = ()  # chain.Chain: variables whose q is one Markov chain (Gaussian or discrete)
    gaussian: tuple = ()  # gaussian_block.GaussianBlock: Normal variables with one joint Gaussian q
    # selector -> {variable: axis} (ppl.graph.components): of the model alone, found here because
    # `Model` keeps its analyses, where every fit's posterior walked the model's expressions again
    components: dict = field(default_factory=dict)

    def for_factor(self, factor: str) -> tuple[Tag, ...]:
        return tuple(t for t in self.tags if t.factor == factor)

    def to_json(self, model: CheckedModel, graph) -> dict:
        variables = []
        for name, var in model.variables.items():
            if var.kind == "const":
                continue
            node = graph.nodes[name]
            scope, why = self.scopes.get(name, (None, None))
            kind = "weight" if var.elem == "weight" else node["state"]
            variables.append({"name": name, "shape": list(node["shape"]), "kind": kind,
                              "scope": scope, "scope_reason": why})
        return {
            "factors": [{"factor": t.factor, "variable": t.variable, "rule": t.rule, "reason": t.reason,
                         "role": t.role, "pair": t.pair, "candidate": t.candidate} for t in self.tags],
            "variables": variables,
            "blocks": [{"variables": list(b.variables), "plates": list(b.plates), "rule": "ssmf",
                        "reason": b.reason} for b in self.blocks],
            "groups": [{"variables": [g.mean, g.precision], "family": g.family, "reason": g.reason}
                       for g in self.groups],
            "chains": [{"variable": c.variable, "factors": [c.first, c.transition], "reason": c.reason,
                        "family": c.family, "sequences": c.sequences} for c in self.chains],
            "weights": [{"plate": plate, "weight": name} for plate, name in model.weights.items()],
            "gaussian_blocks": [{"variables": list(b.members), "reason": b.reason} for b in self.gaussian],
        }


def analyze(model: CheckedModel, dataset=None, methods: dict | None = None,
            gaussian_block: str | None = None) -> Analysis:
    """Tag the edges of `model`; `methods` maps factor names to rules (`--method y=cvi`);
    `gaussian_block` ("all", "none" or member names) replaces the model's `block` statements."""
    methods = _resolve_methods(model, methods or {})
    latent = {n for n, v in model.variables.items() if v.kind == "latent"}
    partial = set(dataset.masks) if dataset is not None else set()
    scopes = _scopes(model, latent)
    blocks = _blocks(model, latent, scopes)
    groups = joint_groups(model)
    in_block = {v: b for b in blocks for v in b.variables}
    tags = []
    for factor in model.factors:
        requested = _requested(factor, methods)
        target = factor.target.name
        if target in latent or target in partial:
            why = (f"`{target} ~ {factor.dist.name}` gives q({target}) its {factor.dist.name} form"
                   if target in latent else f"missing cells of `{target}` are imputed from {factor.dist.name}")
            tags.append(Tag(factor.name, target, "value", "identity", "vmp", why, pair="prior"))
        before = len(tags)
        for role, expr in factor.args.items():
            body = forms.inline(expr, model.definitions)
            for var in sorted(latent, key=list(model.variables).index):
                if not forms.reads(body, var):
                    continue
                tags.append(_tag(model, factor, role, body, var, requested, in_block, target))
        if requested is not None and requested[0] != "vmp" and len(tags) == before:
            _nothing_to_apply(factor, requested)
    chains = find_chains(model)
    return Analysis(_merge_roles(tags), scopes, blocks, groups, chains,
                    gaussian_blocks(model, gaussian_block, groups, chains), mixture_components(model))


def _nothing_to_apply(factor: Factor, requested) -> None:
    wanted, _, span, source = requested
    message = (f"`{wanted}` on `{factor.name}` has nothing to apply to: no parameter of "
               f"{factor.dist.name} depends on a latent variable")
    if source == "annotation":
        raise ModelError("E285", message, span=span, hint="rules choose how a factor updates its latent parameters")
    raise OptionError("E285", message)


def _merge_roles(tags: list[Tag]) -> tuple[Tag, ...]:
    """One tag per (factor, variable, rule): a variable feeding two roles the same way is one edge."""
    merged: dict = {}
    for tag in tags:
        key = (tag.factor, tag.variable, tag.rule)
        if key in merged:
            first = merged[key]
            merged[key] = Tag(first.factor, first.variable, f"{first.role}+{tag.role}", first.form,
                              first.rule, first.reason, first.pair, first.candidate, first.options)
        else:
            merged[key] = tag
    return tuple(merged.values())


def _tag(model, factor: Factor, role: str, body, var: str, requested, in_block, target) -> Tag:
    family = model.variables[var].dist
    if family == "Categorical" and forms.used_as_index_only(body, var):
        form = "selector"
    else:
        form = forms.form(body, var)
    pattern = match(factor.dist.name, role, family, form,
                    "latent" if model.variables[target].kind == "latent" else "observed")
    expr_text = ast.text(factor.args[role])
    if pattern is not None:
        rule = pattern.rule
        reason = pattern.why.format(var=var, dist=factor.dist.name, role=role, expr=expr_text,
                                    link=form.partition(":")[2])
        pair = pattern.pair.format(dist=factor.dist.name) if pattern.pair else None
    else:
        rule, pair = "cvi", None
        reason = (f"no conjugate pattern for {factor.dist.name}'s {role} `{expr_text}` "
                  f"in {family} `{var}` ({form})")
    default = rule
    options = {}
    candidate = None
    if var in in_block and target in in_block and in_block[var] is in_block[target]:
        candidate = "ssmf"
    if requested is not None:
        wanted, options, span, source = requested
        problem = applicable(wanted, factor.dist.name, family, form, default, candidate is not None)
        if problem is not None:
            message = f"`{wanted}` cannot apply to `{factor.name}` → `{var}`: {problem}"
            if source == "annotation":
                raise ModelError("E280", message, span=span, hint=f"the analyzer would use {default}: {reason}")
            raise OptionError("E281", message, hint=f"the analyzer would use {default}: {reason}")
        if wanted != rule:
            reason = f"{wanted} requested ({source}); default would be {default}: {reason}"
            rule = wanted
    if candidate:
        reason += f"; `{var}` and `{target}` form a local block"
    return Tag(factor.name, var, role, form, rule, reason, pair, candidate, options)


def _resolve_methods(model: CheckedModel, methods: dict) -> dict:
    """`--method` keys may name a factor (`x[n]`) or, when unambiguous, its variable (`x`)."""
    resolved = {}
    names = [f.name for f in model.factors]
    for key, value in methods.items():
        rule = rule_name(value) if isinstance(value, str) else None
        if rule is None:
            raise OptionError("E282", f"--method {key}={value}: unknown rule `{value}`")
        matches = [f.name for f in model.factors if f.name == key] or \
                  [f.name for f in model.factors if f.target.name == key]
        if len(matches) != 1:
            guess = nearest(key, names)
            what = "no factor" if not matches else "several factors"
            raise OptionError("E283", f"--method {key}: {what} named `{key}`",
                              hint=f"factors are: {', '.join(names)}" + (f"; did you mean `{guess}`?" if guess else ""))
        resolved[matches[0]] = rule
    return resolved


def _requested(factor: Factor, methods: dict):
    if factor.name in methods:
        return methods[factor.name], {}, None, "--method"
    for note in factor.annotations:
        if note.rule in ("joint", "sequences", "grid"):  # choices of q, not message rules
            continue
        options = {k: (v.value if isinstance(v, ast.Number) else v.id) for k, v in note.options}
        return rule_name(note.rule), options, note.span, "annotation"
    return None


def _scopes(model: CheckedModel, latent: set) -> dict:
    """Local: a plate of the variable grows with the data — the rows, or the levels of a
    categorical column used as an index (documents in long-format data). The levels of a
    categorical response (the classes of a classifier) do not grow with the data."""
    indexers = {n.id for f in model.factors for e in list(f.args.values()) + [f.target]
                for node in ast.walk(e if not isinstance(e, ast.LValue) else ast.Name(e.name, e.span))
                if isinstance(node, ast.Index) for i in node.indices for n in ast.walk(i)
                if isinstance(n, ast.Name)}
    growing = {name for name, size in model.sizes.items()
               if size.origin == "rows" or (size.origin == "levels" and size.data in indexers)}
    largest = next((n for n, s in model.sizes.items() if s.origin == "rows"), None)
    scopes = {}
    for name in latent:
        plates = model.variables[name].plates
        hit = [d for d in plates if d in growing]
        if hit:
            which = "rows" if hit[0] == largest else f"levels of `{model.sizes[hit[0]].data}`"
            scopes[name] = ("local", f"one element per {hit[0]} ({which}): grows with the data")
        elif plates:
            scopes[name] = ("global", f"its plates {', '.join(map(str, plates))} do not grow with the data")
        else:
            scopes[name] = ("global", "a single element shared by every row")
    return scopes


def _blocks(model: CheckedModel, latent: set, scopes: dict) -> tuple[Block, ...]:
    """Connected groups of two or more local latent variables, linked through factors."""
    local = {n for n in latent if scopes[n][0] == "local"}
    parent = {n: n for n in local}

    def find(n):
        while parent[n] != n:
            n = parent[n]
        return n

    for factor in model.factors:
        touched = {factor.target.name} | {n for e in factor.args.values()
                                          for n in local if forms.reads(forms.inline(e, model.definitions), n)}
        touched &= local
        first, *rest = sorted(touched) or [None]
        for other in rest:
            parent[find(other)] = find(first)
    groups = {}
    for n in sorted(local, key=list(model.variables).index):
        groups.setdefault(find(n), []).append(n)
    blocks = []
    for members in groups.values():
        if len(members) < 2:
            continue
        plates = tuple(dict.fromkeys(d for m in members for d in model.variables[m].plates if isinstance(d, str)))
        blocks.append(Block(tuple(members), plates,
                            f"local variables {', '.join(members)} depend on each other within "
                            f"plates {', '.join(plates)}"))
    return tuple(blocks)
