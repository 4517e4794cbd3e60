"""AST → checked model: names resolved, shapes and element types inferred, distribution
arity and constant supports checked, cycles rejected, annotations validated.

Statements may come in any order (as in BUGS): they are typed in dependency order, and a
dependency cycle is an error unless it runs along a plate with a lag (`x[t-1]`).
"""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter

from ppl.diagnostics import ModelError, nearest
from ppl.lang import ast
from ppl.lang.declarations import check_declarations
from ppl.lang.exprtypes import Scope, index_range, infer
from ppl.lang.model import CheckedModel, Definition, Plate
from ppl.lang.rules import RULES, WORD_OPTIONS
from ppl.lang.blocks import check_blocks
from ppl.lang.schedule import check_schedule
from ppl.lang.statements import type_define, type_sample, widen_to_pieces


# options that count something (draws, pieces): whole numbers up to a size that fits in memory
COUNT_OPTIONS = {"samples": 100_000, "pieces": 1000}

def check(program: ast.Program, overrides: dict | None = None) -> CheckedModel:
    """Check a parsed program; raise a located `ModelError` at the first mistake."""
    overrides = dict(overrides or {})
    scope = check_declarations(program, overrides)
    statements = list(_flatten(program.items, (), scope, _target_names(program.items)))
    _check_targets(statements, scope)
    order = _dependency_order(statements, scope)
    factors, definitions = [], {}
    for name in order:
        pieces = [s for s in statements if s[0].target.name == name]
        # Pieces that read earlier elements of the variable (`x[t-1]`) go last, once the
        # starting pieces (`x[1]`) have fixed its element shape; the variable then spans them all.
        pieces.sort(key=lambda s: _reads_itself(s[0]))
        for stmt, plates in pieces:
            scope.loops = {p.var: p for p in plates}
            if _reads_itself(stmt):
                widen_to_pieces(name, pieces, scope)
            if isinstance(stmt, ast.Sample):
                _check_annotations(stmt)
                factors.append(type_sample(stmt, plates, scope))
            else:
                definitions.setdefault(name, []).append(Definition(stmt.target, stmt.value, plates, stmt.span))
                type_define(stmt, plates, scope)
    scope.loops = {}
    position = {id(s): i for i, (s, _) in enumerate(statements)}
    factors.sort(key=lambda f: position.get(id(_source_stmt(f, statements)), 0))
    return CheckedModel(
        source=program.source, program=program, constants=dict(scope.constants),
        sizes=dict(scope.sizes), variables=dict(scope.variables), factors=tuple(factors),
        definitions={k: tuple(v) for k, v in definitions.items()},
        data={i.name: i for i in program.items if isinstance(i, ast.DataDecl)}, overrides=overrides,
        schedule=check_schedule(program.items), blocks=check_blocks(program.items, scope.variables))


def _reads_itself(stmt) -> bool:
    value = stmt.dist if isinstance(stmt, ast.Sample) else stmt.value
    return any(isinstance(n, ast.Name) and n.id == stmt.target.name for n in ast.walk(value))


def _source_stmt(factor, statements):
    for stmt, _ in statements:
        if stmt.span == factor.span:
            return stmt
    return None


def _target_names(items) -> set:
    names = set()
    for item in items:
        if isinstance(item, ast.Loop):
            names |= _target_names(item.body)
        elif isinstance(item, (ast.Sample, ast.Define)):
            names.add(item.target.name)
    return names


def _flatten(items, plates: tuple, scope: Scope, targets: set):
    """(statement, enclosing plates) for every `~` and `=` statement, loops unrolled into plates."""
    for item in items:
        if isinstance(item, ast.Loop):
            taken = item.var in scope.variables or item.var in scope.sizes or item.var in targets
            if taken or any(p.var == item.var for p in plates):
                raise ModelError("E230", f"loop variable `{item.var}` hides another name",
                                 span=item.var_span, hint="pick a fresh name for the loop variable")
            lo, hi = _bound(item.lo, scope), _bound(item.hi, scope)
            dim = hi[0] if hi[0] is not None and hi[1] == 0 else (hi[1] if hi[0] is None else None)
            if dim is None:
                raise ModelError("E231", f"a loop must end at a size or an integer, not `{ast.text(item.hi)}`",
                                 span=item.hi.span)
            if lo[0] is None and hi[0] is None and hi[1] < lo[1]:
                raise ModelError("E221", f"the loop range {lo[1]}..{hi[1]} is empty", span=item.hi.span,
                                 hint="a loop runs from its first bound up to its last, both included")
            yield from _flatten(item.body, plates + (Plate(item.var, lo, hi, dim, item.span),), scope, targets)
        elif isinstance(item, (ast.Sample, ast.Define)):
            yield item, plates


def _bound(expr: ast.Expr, scope: Scope):
    """A loop bound as (size name or None, offset): `N`, `N - 1`, `2`, or a constant."""
    offset = 0
    if isinstance(expr, ast.BinOp) and expr.op in "+-" and isinstance(expr.right, ast.Number) and expr.right.is_int:
        offset = int(expr.right.value) * (1 if expr.op == "+" else -1)
        expr = expr.left
    if isinstance(expr, ast.Number) and expr.is_int:
        return None, int(expr.value) + offset
    if isinstance(expr, ast.Name):
        if isinstance(scope.constants.get(expr.id), int):
            return None, scope.constants[expr.id] + offset
        if expr.id in scope.sizes:
            return expr.id, offset
        guess = nearest(expr.id, scope.sizes)
        raise ModelError("E232", f"unknown size `{expr.id}` in a loop bound", span=expr.span,
                         hint=f"did you mean `{guess}`?" if guess else
                         "sizes come from `const` or from data declarations such as `real[N]`")
    raise ModelError("E231", f"loop bounds are integers, sizes or a size plus or minus an integer, "
                     f"not `{ast.text(expr)}`", span=expr.span)


def _piece(stmt, plates) -> tuple:
    """What elements a statement defines: its indices, loop variables replaced by their ranges."""
    ranges = {p.var: (p.lo, p.hi) for p in plates}
    return tuple(ranges.get(i.id, i.id) if isinstance(i, ast.Name) else ast.text(i) for i in stmt.target.indices)


def _interval(index):
    """(lo, hi) of one left-hand-side index: a loop range or an integer literal."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, str) and index.lstrip("-").isdigit():
        return (None, int(index)), (None, int(index))
    return None


def _overlap(a: tuple, b: tuple) -> bool:
    """Whether two pieces surely share an element: every index range intersects."""
    if len(a) != len(b) or not a:
        return False
    for x, y in zip(a, b):
        ix, iy = _interval(x), _interval(y)
        if ix is None or iy is None:
            return False
        (lo1, hi1), (lo2, hi2) = ix, iy
        if hi1[0] != lo2[0] or hi2[0] != lo1[0]:  # bounds on different sizes: cannot tell
            return False
        if hi1[1] < lo2[1] or hi2[1] < lo1[1]:
            return False
    return True


def _check_targets(statements, scope: Scope) -> None:
    defined, drawn, pieces = {}, {}, {}
    for stmt, plates in statements:
        name = stmt.target.name
        variable = scope.variables.get(name)
        if variable is not None and variable.kind == "const":
            raise ModelError("E233", f"`{name}` is a constant and cannot be drawn or defined",
                             span=stmt.target.name_span)
        if variable is not None and variable.elem == "weight":
            raise ModelError("E269", f"`{name}` is a weight and cannot be drawn or defined: it says how many "
                             "observations each row stands for", span=stmt.target.name_span)
        if isinstance(stmt, ast.Define):
            if variable is not None:
                raise ModelError("E234", f"`{name}` is data; it cannot also be defined with `=`",
                                 span=stmt.target.name_span)
            defined.setdefault(name, stmt)
        else:
            drawn.setdefault(name, stmt)
        if name in defined and name in drawn:
            raise ModelError("E235", f"`{name}` is both defined with `=` and drawn with `~`",
                             span=stmt.target.name_span, hint="give the two different names")
        piece = _piece(stmt, plates)
        earlier = pieces.setdefault(name, [])
        if piece in earlier or (earlier and (not piece or () in earlier)) or any(_overlap(piece, e) for e in earlier):
            raise ModelError("E266", f"`{name}` is drawn or defined twice for the same elements",
                             span=stmt.target.span, hint="each element gets exactly one `~` or `=` statement")
        earlier.append(piece)
        for i, index in enumerate(stmt.target.indices):
            loop = isinstance(index, ast.Name) and any(p.var == index.id for p in plates)
            if not (loop or (isinstance(index, ast.Number) and index.is_int)):
                raise ModelError("E236", f"the left-hand side is indexed by loop variables or integers, "
                                 f"not `{ast.text(index)}`", span=index.span)
        used = {i.id for i in stmt.target.indices if isinstance(i, ast.Name)}
        for plate in plates:
            if plate.var not in used:
                raise ModelError("E237", f"`{ast.lvalue_text(stmt.target)}` is inside `for {plate.var}` "
                                 f"but not indexed by `{plate.var}`", span=stmt.target.span,
                                 hint=f"write `{name}[{plate.var}]`, or move it out of the loop")


def _dependency_order(statements, scope: Scope) -> list[str]:
    """Target names in an order where every name comes after the names it reads."""
    sorter = TopologicalSorter()
    targets = {s.target.name for s, _ in statements}
    spans = {}
    for stmt, plates in statements:
        name = stmt.target.name
        spans.setdefault(name, stmt.span)
        value = stmt.dist if isinstance(stmt, ast.Sample) else stmt.value
        reads = set()
        for node in ast.walk(value):
            if isinstance(node, ast.Index) and isinstance(node.base, ast.Name) and node.base.id == name:
                _check_lag(stmt, node, plates, scope)
                reads.add(None)
            elif isinstance(node, ast.Name) and node.id in targets and node.id != name:
                reads.add(node.id)
            elif isinstance(node, ast.Name) and node.id == name and not _inside_lag(value, node):
                hint = "a variable may only read its own earlier elements, as in `x[t-1]`"
                # observed data in its own parameters: `above ~ Binomial(above + below, p)`
                if getattr(scope.variables.get(name), "kind", None) == "data":
                    hint = (f"`{name}` is the data this statement draws: its distribution's arguments cannot be "
                            "computed from it; give what they need as a column of its own (a Binomial's trials: "
                            "the totals)")
                raise ModelError("E238", f"`{name}` depends on itself", span=node.span, hint=hint)
        sorter.add(name, *(r for r in reads if r is not None))
    try:
        return list(sorter.static_order())
    except CycleError as exc:
        cycle = exc.args[1]
        raise ModelError("E239", "the model has a cycle: " + " → ".join(cycle), span=spans[cycle[0]],
                         hint="a variable may only depend on its own earlier elements along a plate") from None


def _inside_lag(value: ast.Expr, name: ast.Name) -> bool:
    return any(isinstance(n, ast.Index) and n.base is name for n in ast.walk(value))


def _check_lag(stmt, node: ast.Index, plates, scope: Scope) -> None:
    """`x[t-1]` on the right of `x[t] ~ ...`: the lag must be a positive offset of the same loop."""
    scope.loops = {p.var: p for p in plates}
    target = stmt.target
    for i, index in enumerate(node.indices):
        found = index_range(index, scope)
        mine = target.indices[i] if i < len(target.indices) else None
        if found is None or found[2] is None or not isinstance(mine, ast.Name):
            continue
        lag = found[2].lo[1] - found[0][1]
        if found[2].var == mine.id and lag >= 1:
            lowest_name, lowest = found[0]
            if lowest_name is None and lowest < 1:
                plate = found[2]
                raise ModelError("E213", f"`{ast.text(node)}` reaches {target.name}[{lowest}] when "
                                 f"{plate.var} = {plate.lo[1]}; indices start at 1", span=index.span,
                                 hint=f"start the loop later, e.g. `for {plate.var} in {1 + lag}..T`, and draw "
                                      f"the first elements separately")
            return
    raise ModelError("E238", f"`{target.name}` depends on itself through `{ast.text(node)}`",
                     span=node.span, hint="only earlier elements may be read: `x[t-1]` inside `for t in 2..T`")


def _check_annotations(stmt: ast.Sample) -> None:
    seen = set()
    for note in stmt.annotations:
        if note.span.line != stmt.dist.span.end_line:
            # Trailing annotations make `@rule` on the next line read as part of the statement
            # above it; requiring the same line keeps the attachment visible.
            raise ModelError("E274", f"`@{note.rule}` starts a new line, so it would annotate "
                             f"`{ast.lvalue_text(stmt.target)}` above it", span=note.span,
                             hint="put an annotation after the distribution it applies to, on the same "
                                  "line: `y ~ Bernoulli(p) @jaakkola`")
        if note.rule not in RULES:
            guess = nearest(note.rule, RULES)
            raise ModelError("E270", f"unknown rule `@{note.rule}`", span=note.span,
                             expected=", ".join("@" + r for r in RULES),
                             hint=f"did you mean `@{guess}`?" if guess else None)
        allowed = RULES[note.rule][1]
        for key, value in note.options:
            if key not in allowed:
                raise ModelError("E271", f"`@{note.rule}` has no option `{key}`", span=value.span,
                                 expected=", ".join(sorted(allowed)) or "no options")
            word = key in WORD_OPTIONS
            if not isinstance(value, ast.Name if word else ast.Number):
                raise ModelError("E272", f"option `{key}` must be a {'word' if word else 'number'}",
                                 span=value.span)
            if key in COUNT_OPTIONS and not (value.is_int and 0 <= value.value <= COUNT_OPTIONS[key]):
                raise ModelError("E275", f"option `{key}` must be a whole number from 0 to {COUNT_OPTIONS[key]}",
                                 span=value.span)
        seen.add(note.rule)
    if len(seen) > 1:
        raise ModelError("E273", "a statement takes one rule annotation", span=stmt.annotations[1].span)
