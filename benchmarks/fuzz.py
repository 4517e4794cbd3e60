"""A long fuzz run of `ppl check`, `ppl infer` and the workflow on the posterior: the end-to-end
cases of tests/test_fuzz.py (documented models, mutated, with generated and perturbed data, then
the report, save and load, draws, predict and score, ArviZ and the plots of every case that fits;
tests/fuzz_inputs.py), for as many minutes as asked, counting outcomes and collecting every
internal error (an exception that is not a PplError) with the seed that replays it.

    python3 benchmarks/fuzz.py --minutes 30            # then writes docs/reliability.md § Fuzzing
    python3 benchmarks/fuzz.py --minutes 1 --no-write  # a quick look
    python3 benchmarks/fuzz.py --replay 48             # one case: the model, the CSV, the outcome

Each case has 10 seconds (a case past that counts as "timeout", not as a crash). Seeds are
consecutive from --start, so a run is repeatable.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import _report  # noqa: F401  (one BLAS thread, before numpy loads)

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import fuzz_inputs  # noqa: E402

DOC = ROOT / "docs" / "reliability.md"
TITLE = "## Fuzzing"


def run(minutes: float, start: int, seconds: float) -> tuple[int, collections.Counter, dict, float]:
    """(cases run, outcomes counted, crashes by (type, place) -> (seed, message), seconds)."""
    warnings.simplefilter("ignore")
    models = fuzz_inputs.corpus()
    outcomes, crashes = collections.Counter(), {}
    folder = Path(tempfile.mkdtemp(prefix="ppl-fuzz-"))
    began = time.perf_counter()
    seed = start
    while time.perf_counter() - began < 60 * minutes:
        text, csv = fuzz_inputs.case(seed, models)
        try:
            outcome = fuzz_inputs.run_case(text, csv, folder, seconds=seconds)
        except Exception as error:  # an internal error: what this script is looking for
            frame = traceback.extract_tb(error.__traceback__)[-1]
            key = (type(error).__name__, f"{Path(frame.filename).name}:{frame.lineno}")
            crashes.setdefault(key, (seed, str(error).splitlines()[0][:120] if str(error) else ""))
            outcome = "INTERNAL ERROR"
        outcomes[outcome] += 1
        seed += 1
    return seed - start, outcomes, crashes, time.perf_counter() - began


def report(count: int, outcomes, crashes, elapsed: float, start: int, models: int) -> str:
    lines = [TITLE, "",
             "Written by `python3 benchmarks/fuzz.py` (the long form of `tests/test_fuzz.py` part (d)):",
             f"{models} documented models, mutated, with generated and perturbed data, each through",
             "`check`, three sweeps of `infer`, then the report, save and load, draws, predict and score, "
             "ArviZ and the plots of its posterior, 10 s per case.", "",
             f"Last run: {count} cases (seeds {start}..{start + count - 1}) in {elapsed / 60:.1f} minutes on "
             f"{_report.machine()}, shared with other jobs; **{outcomes['INTERNAL ERROR']} internal errors** "
             f"in {len(crashes)} distinct places.", "",
             "| outcome | cases |", "|---|---|"]
    lines += [f"| {name} | {n} |" for name, n in outcomes.most_common()]
    if crashes:
        lines += ["", "| internal error | where | first seed | message |", "|---|---|---|---|"]
        lines += [f"| {kind} | {where} | {seed} | {message.replace('|', '/')} |"
                  for (kind, where), (seed, message) in sorted(crashes.items())]
    return "\n".join(lines) + "\n"


def replay(seed: int) -> None:
    text, csv = fuzz_inputs.case(seed, fuzz_inputs.corpus())
    print(text)
    print(csv if csv is not None else "(the model does not compile)")
    print(fuzz_inputs.run_case(text, csv, Path(tempfile.mkdtemp(prefix="ppl-fuzz-")), seconds=60))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--seconds", type=float, default=10.0, help="time limit of one case")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--replay", type=int, metavar="SEED", help="run one case and show it")
    args = parser.parse_args()
    if args.replay is not None:
        replay(args.replay)
        return 0
    count, outcomes, crashes, elapsed = run(args.minutes, args.start, args.seconds)
    text = report(count, outcomes, crashes, elapsed, args.start, len(fuzz_inputs.corpus()))
    print(text)
    if not args.no_write:
        _report.write_section(text, TITLE, DOC)
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
