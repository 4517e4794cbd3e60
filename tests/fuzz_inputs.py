"""Model texts and data sets for fuzzing `ppl check` and `ppl infer` end to end.

The models are the language's own examples (every ```ppl block in docs/, plus the test seeds),
optionally mutated: an annotation swapped for another rule, a constant changed, a number
replaced. The data are drawn from each model's data declarations (columns, types, sizes and
levels as declared), then perturbed: an empty cell, `inf`, `nan`, 1e300, a negative count, a
category out of range, text in a numeric column, a single row. Everything comes from one seed,
so a failure is replayed by its seed (`case(seed)`).

After a fit that runs, the case goes on through the workflow a user runs on its posterior
(`after_the_fit`): the report, save and load, draws, prediction and scores on the fitted rows,
ArviZ, the plots.

Used by tests/test_fuzz.py (a bounded run in CI) and benchmarks/fuzz.py (a long run).
"""

from __future__ import annotations

import random
import re
import signal
from pathlib import Path

from model_texts import CHAIN, IRIS_SOFTMAX, LOGISTIC, MIXTURE
import ppl
from ppl.lang import ast

DOCS = Path(__file__).resolve().parents[1] / "docs"
_BLOCK = re.compile(r"```ppl\n(.*?)```", re.S)

RULES = ["", "@vmp", "@ncvmp", "@ncvmp(damping=0.5)", "@cvi", "@cvi(samples=0)", "@cvi(samples=3)",
         "@cvi(form=site)", "@cvi(minibatch=2)", "@cvi(step=0.5, kappa=0.7)", "@laplace", "@delta",
         "@jaakkola", "@bohning", "@piecewise", "@stick", "@joint", "@ssmf", "@grid", "@grid(nodes=5, sds=2)",
         "@grid(nodes=1)"]
SCHEDULES = ["schedule batch", "schedule batch(inner=3, init=random)", "schedule batch(warm=1)",
             "schedule svi(batch=2)", "schedule svi(batch=1, kappa=0.7, ramp=0)", "schedule ssmf(batch=2)",
             "schedule ssmf_a(batch=2, estep=gibbs)", "schedule ssmf(batch=3, estep=cvb0)",
             "schedule cvi(minibatch=2, step=0.5)", "schedule svi(batch=100, passes=1)"]
NUMBERS = ["0", "1", "-1", "2", "0.5", "1e-8", "1e8", "1e300", "3", "100"]
BAD_CELLS = ["", "inf", "-inf", "nan", "NA", "1e300", "-1e300", "-1", "0", "1e8", "abc", "2.5", "-0",
             "1e-300", "99", "true", " 1 "]


MIXTURE_1D = """\
const K = 2
data y: real[N]
pi ~ Dirichlet(ones(K))
for k in 1..K { mu[k] ~ Normal(0, 0.01) }
for n in 1..N { z[n] ~ Categorical(pi)
  y[n] ~ Normal(mu[z[n]], 1.0) }
"""


def corpus() -> list[str]:
    """Every model of the documentation that compiles, and the test seeds."""
    texts = [CHAIN, MIXTURE, LOGISTIC, IRIS_SOFTMAX, MIXTURE_1D]
    for page in sorted(DOCS.rglob("*.md")):
        texts += _BLOCK.findall(page.read_text(encoding="utf-8"))
    models = []
    for text in texts:
        try:
            ppl.compile(text)
        except ppl.PplError:
            continue
        models.append(text)
    return models


def mutate(text: str, rnd: random.Random) -> str:
    """One small change that keeps most models valid: a rule annotation (`@grid` among them), a
    schedule, a joint block over some of the drawn variables, a constant or a number."""
    choice = rnd.random()
    lines = text.splitlines()
    samples = [i for i, line in enumerate(lines) if "~" in line and not line.lstrip().startswith("#")]
    drawn = sorted({m.group(1) for i in samples if (m := re.search(r"(\w+)(\[[^\]]*\])?\s*(:[^~]*)?~", lines[i]))})
    if choice < 0.15:
        kept = [line for line in lines if not line.lstrip().startswith("schedule ")]
        return "\n".join([rnd.choice(SCHEDULES)] + kept) + "\n"
    if choice < 0.25 and len(drawn) > 1:
        return text + f"block ({', '.join(rnd.sample(drawn, rnd.randint(2, min(3, len(drawn)))))})\n"
    if choice < 0.6 and samples:
        i = rnd.choice(samples)
        line = re.sub(r"\s*@\w+(\([^)]*\))?", "", lines[i].split("#")[0]).rstrip()
        if line.rstrip().endswith("}"):  # a one-line loop: annotate the statement inside it
            body, _, _ = line.rpartition("}")
            lines[i] = f"{body.rstrip()} {rnd.choice(RULES)} }}"
        else:
            lines[i] = f"{line} {rnd.choice(RULES)}"
        return "\n".join(lines) + "\n"
    numbers = list(re.finditer(r"(?<![\w.])\d+(\.\d+)?(e-?\d+)?(?![\w.])", text))
    if choice < 0.92 and numbers:
        m = rnd.choice(numbers)
        return text[:m.start()] + rnd.choice(NUMBERS) + text[m.end():]
    return text


def _size(dim, sizes: dict, constants: dict, rnd: random.Random) -> int:
    if isinstance(dim, int):
        return dim
    if isinstance(constants.get(dim), int):
        return constants[dim]
    return sizes.setdefault(dim, rnd.choice([1, 2, 3, 4]))


def _column_names(decl: ast.DataDecl, width: int | None) -> list[str]:
    binding = decl.binding
    if binding is None:
        return [decl.name] if width is None else [f"{decl.name}{j + 1}" for j in range(width)]
    if isinstance(binding, ast.Column):
        return [binding.name]
    if isinstance(binding, ast.ColumnList):
        return [c.name for c in binding.columns]
    prefix, start = re.match(r"(.*?)(\d+)$", binding.first.name).groups()
    return [f"{prefix}{int(start) + j}" for j in range(width or 1)]


def _cell(elem: str, levels: int | None, rnd: random.Random) -> str:
    if elem == "real":
        return repr(round(rnd.gauss(0, 2), 4))
    if elem == "int":
        return str(min(int(rnd.expovariate(0.5)), 20))
    if elem == "bool":
        return str(rnd.randint(0, 1))
    return str(rnd.randint(1, levels or 2))


def data_for(model, rnd: random.Random) -> str:
    """A CSV for the data declarations of a checked model (sizes drawn, constants respected)."""
    checked = model.checked
    sizes = {}
    constants = {k: v for k, v in checked.constants.items() if v is not None}
    rows = rnd.choice([1, 2, 3, 5, 8, 20, 60])
    columns = {}
    for name, decl in checked.data.items():
        var = checked.variables[name]
        if isinstance(var.shape[0], str):
            sizes.setdefault(var.shape[0], rows)
        n = _size(var.shape[0], sizes, constants, rnd)
        width = _size(var.shape[1], sizes, constants, rnd) if len(var.shape) > 1 else None
        if isinstance(decl.binding, ast.ColumnList):
            width = len(decl.binding.columns)
        levels = _size(var.levels, sizes, constants, rnd) if var.levels is not None else None
        for column in _column_names(decl, width):
            columns[column] = [_cell(var.elem, levels, rnd) for _ in range(n)]
    if not columns:
        columns["unused"] = ["0"] * rows
    length = max(len(v) for v in columns.values())
    for values in columns.values():  # sizes drawn apart can differ: pad (a ragged file is a case too)
        values += [""] * (length - len(values))
    if rnd.random() < 0.5:
        for _ in range(rnd.randint(1, 2)):
            column = rnd.choice(sorted(columns))
            if columns[column]:
                columns[column][rnd.randrange(len(columns[column]))] = rnd.choice(BAD_CELLS)
    header = ",".join(columns)
    body = "\n".join(",".join(row) for row in zip(*columns.values()))
    return header + "\n" + body + ("\n" if body else "")


def case(seed: int, models: list[str]) -> tuple[str, str | None]:
    """(model text, CSV text or None when the mutated model does not compile) for one seed."""
    rnd = random.Random(seed)
    text = rnd.choice(models)
    if rnd.random() < 0.7:
        text = mutate(text, rnd)
    try:
        model = ppl.compile(text)
    except ppl.PplError:
        return text, None
    return text, data_for(model, rnd)


class CaseTimeout(BaseException):
    """A case ran past its time limit (not an exception ppl could catch by accident)."""


def _timeout(signum, frame):
    raise CaseTimeout


def run_case(text: str, csv: str | None, folder: Path, sweeps: int = 3, seconds: float = 10.0,
             plot: bool = True) -> str:
    """`check`, then `infer` for a few sweeps, then `after_the_fit` (with the plots or not); the
    outcome's name ("ran", "data error E406", "score: model error E352", "timeout", ...), or the
    exception that is not a PplError, raised."""
    previous = signal.signal(signal.SIGALRM, _timeout)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        model = ppl.compile(text)
        if csv is None:
            return "model error"
        path = folder / "data.csv"
        path.write_text(csv, encoding="utf-8")
        model.check_report(path)
        return after_the_fit(model, model.infer(path, seed=0, max_iter=sweeps), path, folder, plot)
    except ppl.PplError as error:
        return f"{error.kind} {error.code}"
    except CaseTimeout:
        return "timeout"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def after_the_fit(model, post, path: Path, folder: Path, plot: bool = True) -> str:
    """Every step of the workflow on a posterior, each whatever the others raised: "ran", or the
    first step's PplError as "step: kind code". `predict` fills the response cells of every other
    row of the data, emptied. The plots (a PNG) cost ten times the rest."""
    saved, new = folder / "post.json", folder / "new.csv"
    new.write_text(with_empty_responses(model, path.read_text(encoding="utf-8")), encoding="utf-8")
    steps = {"report": post.report, "save and load": lambda: (post.save(saved), ppl.Posterior.load(saved)),
             "draws": lambda: post.draws(7, seed=1), "predict": lambda: post.predict(new),
             "score": lambda: post.score(path), "arviz": lambda: post.to_arviz(draws=20, seed=1)}
    if plot:
        import matplotlib
        import matplotlib.pyplot as plt
        matplotlib.use("Agg")
        steps["plot"] = lambda: plt.close(post.plot(path=folder / "plot.png"))
    outcome = "ran"
    for name, step in steps.items():
        try:
            step()
        except ppl.PplError as error:
            outcome = f"{name}: {error.kind} {error.code}" if outcome == "ran" else outcome
    return outcome


def with_empty_responses(model, csv: str) -> str:
    """`csv` with the response cells of every other row empty: the cells `predict` fills."""
    from ppl.data.held_out import _response_columns
    checked = model.checked
    lines = csv.splitlines()
    header = lines[0].split(",")
    responses = set()
    for name in checked.data:
        if checked.factors_of(name):
            try:
                responses.update(_response_columns(checked.data[name], header, checked, "fuzz"))
            except ppl.PplError:  # columns the file lacks: predict says so
                continue
    rows = [line.split(",") for line in lines[1:]]
    for row in rows[1::2]:
        for i, column in enumerate(header):
            if column in responses and i < len(row):
                row[i] = ""
    return "\n".join([lines[0]] + [",".join(row) for row in rows]) + "\n"
