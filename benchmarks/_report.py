"""What every benchmark script shares: one BLAS thread, a description of the machine, and
writing one `## ` section of docs/benchmarks.md without touching the others.

Import it before numpy: the thread count is read when the BLAS library loads.
"""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path

# The environment as the user started the script: commands timed as a user runs them get it.
USER_ENVIRON = dict(os.environ)

# One BLAS thread for every contender: fair, and repeatable on a small shared machine (two
# threads on two busy cores made matrix products up to 50x slower in our runs).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def one_xla_thread() -> None:
    """One thread for JAX's CPU backend too (NumPyro's peers); call it before importing jax."""
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()} "
            f"({platform.python_implementation()}), {platform.system()} {platform.release()}")


def write_section(text: str, title: str, path: Path) -> None:
    """Replace the section headed `title` (up to the next `## ` heading) of `path`, or add it."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# Benchmarks\n\n" + text, encoding="utf-8")
        return
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == title), None)
    if start is None:
        body = "".join(lines)
        if body and not body.endswith("\n"):
            body += "\n"
        path.write_text(body + ("\n" if body.strip() else "") + text, encoding="utf-8")
        return
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    after = "".join(lines[end:])
    path.write_text("".join(lines[:start]) + text + ("\n" + after if after else ""), encoding="utf-8")


def rotated(items: list, round_: int) -> list:
    """`items` started at position `round_` (wrapping): interleaved rounds that rotate who runs
    first, so that no contender always meets the machine's state after the same other one."""
    k = round_ % len(items)
    return items[k:] + items[:k]


def publish(sections: list, path: Path, write: bool = True) -> None:
    """Print each (text, title) section and, when `write`, replace it in `path`."""
    for text, title in sections:
        print(text)
        if write:
            write_section(text, title, path)
            print(f"wrote '{title[3:]}' in {path.name}")


def rounds_command(doc: str, title: str, measure, report, rounds: int = 3):
    """The `main` of a script that times contenders in interleaved rounds: `--rounds`, `--no-write`;
    `measure(rounds)` gives the rows, `report(rows, rounds)` the section `title` of docs/benchmarks.md."""
    def main(argv=None) -> int:
        parser = argparse.ArgumentParser(description=doc.splitlines()[0])
        parser.add_argument("--rounds", type=int, default=rounds)
        parser.add_argument("--no-write", action="store_true")
        args = parser.parse_args(argv)
        page = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
        publish([(report(measure(args.rounds), args.rounds), title)], page, write=not args.no_write)
        return 0
    return main


def rounds_opening(script: str, rounds: int) -> str:
    """The opening of a `rounds_command` section's text: the command, the machine, what a cell is."""
    return (f"`python3 benchmarks/{script} --rounds {rounds}` on {machine()}, one BLAS thread: CPU ms of a whole "
            "fit (the least over the calls that fill 50 ms, in each of the interleaved rounds), sweeps in brackets")


def reach_text(row: dict, target: str, whole: float, reach: float) -> str:
    """How a peer's run compares with `target`'s ELBO − `reach`: after how many seconds of running
    it got there (and that as a multiple of the target's whole run, `whole` s), or that it did not."""
    if row["reached"] is not None:
        return (f"reaches {target}'s ELBO − {reach} after {row['reached']:.2f} s of running, "
                f"{row['reached'] / whole:.0f}× {target}'s whole run")
    return f"does not reach {target}'s ELBO − {reach} in {row['wall']:.0f} s of running"
