"""Compile-time benchmark: how long ppl takes to turn a .vim model into an analysed factor graph.

For every model (default: models/*.vim; /tmp/gmm.vim and /tmp/kal.vim when models/ is empty)
the stages are timed separately, each as the median of --repeat runs after a warm-up:

    parse    text -> AST                         ppl.lang.parse
    check    AST -> checked model                ppl.lang.check
    bind     CSV -> typed arrays (if a CSV)      ppl.data.bind
    graph    checked model -> factor graph       ppl.graph.factor_graph
    analyze  factor graph -> rule per edge       ppl.graph.analyze

"total" is parse + check + graph + analyze; binding is reported but left out of the total,
because it grows with the data and reads a file. The target is total < 50 ms per model.

The table is printed and written into docs/benchmarks.md as the section "## Compile time"
(the rest of that file is left alone). Run from the repository root:

    python3 benchmarks/compile.py                 # all models, 20 repetitions
    python3 benchmarks/compile.py models/lda.vim  # some models only
    python3 benchmarks/compile.py --no-write      # print only

Exit status: 0 when every model passes, 1 when one fails the target or does not compile.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, write_section  # noqa: E402
from ppl.data import bind  # noqa: E402
from ppl.diagnostics import PplError  # noqa: E402
from ppl.graph import analyze, build  # noqa: E402
from ppl.lang import check, parse  # noqa: E402

TARGET_MS = 50.0
SECTION = "## Compile time"
DOC = ROOT / "docs" / "benchmarks.md"
# Models used when models/ has none, with the data each is checked against.
FALLBACK = {Path("/tmp/gmm.vim"): Path("/tmp/of.csv"), Path("/tmp/kal.vim"): Path("/tmp/kal.csv")}
STAGES = ("parse", "check", "bind", "graph", "analyze")


@dataclass
class Result:
    model: Path
    data: Path | None
    times: dict = field(default_factory=dict)  # stage -> median milliseconds
    error: str | None = None

    @property
    def total(self) -> float:
        return sum(self.times[s] for s in ("parse", "check", "graph", "analyze"))

    @property
    def verdict(self) -> str:
        if self.error:
            return "ERROR"
        return "PASS" if self.total < TARGET_MS else "FAIL"


def find_data(model: Path, explicit: dict) -> Path | None:
    """The CSV a model is checked against: given with --data, `<stem>.csv` next to the model,
    the first `name.csv` named in the model's comments that exists next to it, or a fallback."""
    if model in explicit:
        return explicit[model]
    same = model.with_suffix(".csv")
    if same.is_file():
        return same
    for line in model.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not stripped.startswith(("#", "//")):
            continue
        for name in re.findall(r"[\w.-]+\.csv", stripped):
            candidate = model.parent / name
            if candidate.is_file():
                return candidate
    fallback = FALLBACK.get(model.resolve())
    return fallback if fallback is not None and fallback.is_file() else None


def median_ms(fn, repeat: int) -> tuple[float, object]:
    """Median wall time of `fn()` over `repeat` runs, after one untimed warm-up run."""
    value = fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        value = fn()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(samples), value


def measure(model: Path, data: Path | None, repeat: int) -> Result:
    result = Result(model, data)
    text = model.read_text(encoding="utf-8")
    name = str(model)
    gc.collect()
    try:
        result.times["parse"], program = median_ms(lambda: parse(text, name), repeat)
        result.times["check"], checked = median_ms(lambda: check(program), repeat)
        if data is not None:
            result.times["bind"], dataset = median_ms(lambda: bind(checked, str(data)), repeat)
        else:
            result.times["bind"], dataset = None, None
        result.times["graph"], _ = median_ms(lambda: build(checked, dataset), repeat)
        result.times["analyze"], _ = median_ms(lambda: analyze(checked, dataset), repeat)
    except PplError as exc:
        result.error = f"{exc.kind} [{exc.code}]: {exc.message}"
    return result


def cold_parse_ms() -> float:
    """The first parse in a fresh process also builds the LALR tables (cached afterwards)."""
    from ppl.lang import parser
    parser._lark.cache_clear()
    start = time.perf_counter_ns()
    parse("x ~ Normal(0, 1)")
    return (time.perf_counter_ns() - start) / 1e6


def display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def table(results: list[Result]) -> str:
    headers = ["model", "data", "parse ms", "check ms", "bind ms", "graph ms", "analyze ms",
               "total ms", "result"]
    rows = []
    for r in results:
        if r.error:
            rows.append([display(r.model), display(r.data) if r.data else "-"] + ["-"] * 6
                        + [f"ERROR: {r.error}"])
            continue
        cells = [f"{r.times[s]:.2f}" if r.times[s] is not None else "-" for s in STAGES]
        rows.append([display(r.model), display(r.data) if r.data else "-", *cells,
                     f"{r.total:.2f}", r.verdict])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    right = {i for i, h in enumerate(headers) if h.endswith(" ms")}

    def line(cells):
        out = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "| " + " | ".join(out) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if i in right else "-" * (w + 2)
                         for i, w in enumerate(widths)) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


def section(results: list[Result], repeat: int, command: str, cold: float) -> str:
    passed = sum(r.verdict == "PASS" for r in results)
    return "\n".join([
        SECTION,
        "",
        "Time to compile each model into an analysed factor graph: parse (text → AST), check",
        "(names, shapes, types, supports), graph (NetworkX factor graph) and analyze (update",
        f"rule per edge). Each cell is the median of {repeat} runs, in milliseconds, measured in",
        "one process after import and one untimed warm-up run. `bind` (reading the CSV and",
        f"checking its values) is shown but not counted in `total`. Target: total < {TARGET_MS:g} ms",
        "per model. See [benchmarks/README.md](../benchmarks/README.md).",
        "",
        f"- Machine: {machine()}",
        f"- Command: `{command}`",
        f"- First parse in a fresh process (builds the LALR tables once): {cold:.1f} ms",
        f"- Result: {passed} of {len(results)} models pass",
        "",
        table(results),
        "",
    ])


def _data_option(text: str) -> tuple[Path, Path]:
    model, sep, data = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected MODEL=CSV, got {text!r}")
    return Path(model).resolve(), Path(data)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Time parse, check, bind, graph and analyze per model.")
    p.add_argument("models", nargs="*", type=Path, help="model files (default: models/*.vim)")
    p.add_argument("--repeat", type=int, default=20, help="timed runs per stage (default 20)")
    p.add_argument("--data", action="append", default=[], type=_data_option, metavar="MODEL=CSV",
                   help="the CSV for a model, when it is not found automatically")
    p.add_argument("--no-write", action="store_true", help=f"do not update {display(DOC)}")
    args = p.parse_args(argv)

    models = args.models or sorted((ROOT / "models").glob("*.vim")) or sorted(FALLBACK)
    explicit = dict(args.data)
    cold = cold_parse_ms()
    results = [measure(m, find_data(m.resolve(), explicit), args.repeat) for m in models]

    print(table(results))
    print(f"\n{machine()}; median of {args.repeat} runs; target total < {TARGET_MS:g} ms "
          f"(bind not counted); first parse in a fresh process {cold:.1f} ms")
    if not args.no_write:
        shown = ["python3", "benchmarks/compile.py"] + (sys.argv[1:] if argv is None else list(argv))
        write_section(section(results, args.repeat, " ".join(shown), cold), SECTION, DOC)
        print(f"wrote the '{SECTION[3:]}' section of {display(DOC)}")
    return 0 if all(r.verdict == "PASS" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
