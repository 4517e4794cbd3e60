"""Docs that stay true: re-run every command and snippet shown in README.md and docs/, and
compare what it prints with the page.

    python tests/docs_check.py              # check every page (slow blocks too), exit 1 on a mismatch
    python tests/docs_check.py --fast       # leave out the blocks marked slow (what CI runs)
    python tests/docs_check.py --update     # rewrite the pages with the real output
    python tests/docs_check.py docs/tutorials/gmm.md --times

What is checked:

- a ```console block: each `$ command` line and the lines under it (its output, stdout and
  stderr as a terminal shows them). `ppl ...` runs in this process (`ppl.cli.main`); anything
  else (`sed`, a redirection, a pipe) runs in bash with `ppl` on the PATH;
- a ```python block with `>>>` lines: each example and the lines under it, as doctest reads them;
- a ```python block followed by a ```text block: the script, and the text block is its output;
  a ```python block with no output block only has to run without an error.

Everything runs in a scratch folder holding a copy of the checkout (so `models/...` resolves and
whatever a command writes, even over a model or data file, lands in the copy), snippets in a
fresh interpreter each. Identical commands run once. The check fails if a run still wrote into
the checkout (an absolute path, say): a page must never leave files behind.

Tolerances: timings (`0.69 s`, `12 ms`) never count, nor do round-off's digits: two numbers
agree when they differ by at most `ROUNDOFF_ABS` or `ROUNDOFF_REL` of the larger (another CPU or
BLAS build sums in another order: the ELBO change of a run at its fixed point, 1e-12 nats, may
print with either sign, and a full-precision ELBO differs in its last digit). A value printed to
4 to 6 digits that changes still differs (its last digit moves it by 1e-6 of itself or more,
unless it is below 1e-8 in absolute value, round-off's size for the nats and sds that ppl
reports). An HTML comment on the line before a fence
says more about the block:

    <!-- docs-check: digits=4 -->     floats compared to 4 significant digits (Monte Carlo output)
    <!-- docs-check: head -->         the page shows the first lines of each output only
    <!-- docs-check: slow -->         takes more than a few seconds: left out by --fast
    <!-- docs-check: skip: REASON --> not run (a synopsis, an old version of ppl, ...)
    <!-- docs-check: file=NAME -->    before a ```ppl or ```csv block: written to NAME (in the
                                      scratch folder, or an absolute path) for the commands below
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^\s*<!--\s*docs-check:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
TIME = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|µs|seconds?)\b")
FLOAT = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?")
SOURCE_LINE = re.compile(r"(?:\S*/)?(ppl/[\w/]+\.py):\d+")  # warnings name a line of ppl's source
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")  # FLOAT, and integers (a 0)
ROUNDOFF_ABS, ROUNDOFF_REL = 1e-8, 1e-12  # numbers this close agree (module docstring)
SENTINEL = "--- docs-check example end ---"
UNTRACKED = (".*", "__pycache__", "*.egg-info")  # neither copied to the scratch folder nor watched
SIMPLE = re.compile(r"ppl(\s+[^|&;<>`$()*?\\'\"]+)+")  # a plain `ppl ...` command: run in this process
DOCTEST_RUNNER = f"""
import json, sys, traceback
namespace = {{"__name__": "__main__"}}
for source in json.load(sys.stdin):
    try:
        exec(compile(source, "<docs>", "single"), namespace)
    except Exception:
        print(traceback.format_exc().splitlines()[-1])
    print({SENTINEL!r}, flush=True)
"""


@dataclass
class Block:
    """One thing to run and the lines of the page it must print (lines[start:end])."""

    page: Path
    kind: str  # "shell" | "python" | "doctest"
    code: str | list
    start: int
    end: int
    indent: str
    options: dict = field(default_factory=dict)
    fence: int = 0  # line of the opening fence (for messages)


def parse_options(text: str) -> dict:
    options = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, _, value = part.partition("=") if "=" in part and not part.startswith("skip") else part.partition(":")
        options[key.strip()] = value.strip() or True
    return options


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found, options, i = [], {}, 0
    while i < len(lines):
        marker, fence = MARKER.match(lines[i]), FENCE.match(lines[i])
        if marker:
            options = parse_options(marker.group(1))
        elif fence and fence.group(2):
            indent, lang = fence.group(1), fence.group(2)
            close = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            body = [line[len(indent):] for line in lines[i + 1:close]]
            if "file" in options:  # a model or data block that later commands read
                found.append(Block(page, "file", (options["file"], "\n".join(body) + "\n"), i + 1, i + 1, indent,
                                   options, i + 1))
            elif lang == "console":
                found += _console(page, body, i + 1, indent, options, i + 1)
            elif lang == "python" and any(line.startswith(">>> ") for line in body):
                found.append(_doctest(page, body, i + 1, indent, options))
            elif lang == "python":
                after = close + 1
                while after < len(lines) and not lines[after].strip():
                    after += 1
                output = FENCE.match(lines[after]) if after < len(lines) else None
                if output and output.group(2) == "text" and output.group(1) == indent:
                    end = next(j for j in range(after + 1, len(lines)) if lines[j].strip() == "```")
                    found.append(Block(page, "python", "\n".join(body), after + 1, end, indent, options, i + 1))
                    close = end
                else:
                    found.append(Block(page, "python", "\n".join(body), close, close, indent,
                                       {**options, "run-only": True}, i + 1))
            options, i = {}, close
        elif lines[i].strip():
            options = {}
        i += 1
    return found


def _console(page, body, first, indent, options, fence) -> list[Block]:
    found = []
    for k, line in enumerate(body):
        if line.startswith("$ "):
            end = next((j for j in range(k + 1, len(body)) if body[j].startswith("$ ")), len(body))
            found.append(Block(page, "shell", line[2:], first + k + 1, first + end, indent, options, fence))
    return found


def _doctest(page, body, first, indent, options) -> Block:
    """One block for the whole session: code is [(source, output start, output end)]."""
    examples, k = [], 0
    while k < len(body):
        if body[k].startswith(">>> "):
            source = [body[k][4:]]
            k += 1
            while k < len(body) and body[k].startswith("... "):
                source.append(body[k][4:])
                k += 1
            end = next((j for j in range(k, len(body)) if body[j].startswith(">>> ")), len(body))
            examples.append(("\n".join(source) + "\n", first + k, first + end))
            k = end
        else:
            k += 1
    return Block(page, "doctest", examples, first, first + len(body), indent, options, first)


class Runner:
    """Runs blocks in a scratch folder, caching identical commands."""

    def __init__(self):
        self.scratch = Path(tempfile.mkdtemp(prefix="docs-check-")) / "checkout"
        shutil.copytree(ROOT, self.scratch, ignore=shutil.ignore_patterns(*UNTRACKED))
        shim = self.scratch / ".bin"
        shim.mkdir()
        (shim / "ppl").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ppl.cli "$@"\n')
        (shim / "ppl").chmod(0o755)
        self.env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
                    "MPLBACKEND": "Agg", "COLUMNS": "200",
                    # ArviZ warns of its coming refactor at the first import of each day: not the page's output
                    "PYTHONWARNINGS": "ignore::FutureWarning:arviz"}
        self.cache: dict = {}
        self.seconds: dict = {}
        self.seen = snapshot()  # the checkout's files after the last block run

    def run(self, block: Block):
        if block.kind == "file":  # written every time: later commands of this page read it
            name, text = block.code
            (self.scratch / name).write_text(text, encoding="utf-8")
            return "", True
        key = (block.kind, json.dumps(block.code))
        if key not in self.cache:
            start = time.perf_counter()
            text, ok = getattr(self, f"_{block.kind}")(block.code)
            self.cache[key] = (self._clean(text), ok)
            self.seconds[key] = time.perf_counter() - start
        return self.cache[key]

    def _clean(self, text):
        """Paths as the reader's checkout shows them: `ppl/infer/engine.py`, not the scratch folder's."""
        if isinstance(text, list):
            return [self._clean(t) for t in text]
        return text.replace(f"{self.scratch}/", "").replace(f"{ROOT}/", "")

    def _shell(self, command: str):
        if SIMPLE.fullmatch(command.split("#")[0].strip()):
            return self._in_process(shlex.split(command, comments=True)[1:])
        result = subprocess.run(["bash", "-c", command], cwd=self.scratch, env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return result.stdout, result.returncode == 0

    def _in_process(self, argv):
        from ppl.cli import main
        out, here = io.StringIO(), os.getcwd()
        try:
            os.chdir(self.scratch)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                main(argv)
        finally:
            os.chdir(here)
        return out.getvalue(), True

    def _python(self, code: str):
        result = subprocess.run([sys.executable, "-c", code], cwd=self.scratch, env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return result.stdout, result.returncode == 0

    def _doctest(self, examples):
        result = subprocess.run([sys.executable, "-c", DOCTEST_RUNNER], cwd=self.scratch, env=self.env, text=True,
                                input=json.dumps([source for source, _, _ in examples]),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        outputs = result.stdout.split(SENTINEL + "\n")
        return outputs[:len(examples)], result.returncode == 0


def normalise(text: str, options: dict) -> list[str]:
    text = TIME.sub("<time>", text)
    text = SOURCE_LINE.sub(r"\1:<line>", text)
    digits = options.get("digits")
    if digits:
        text = FLOAT.sub(lambda m: f"{float(m.group()):.{int(digits)}g}", text)
    return [line.rstrip() for line in text.rstrip("\n").splitlines()] if text.strip() else []


def agree(shown: list[str], got: list[str]) -> bool:
    """Whether two normalised outputs are the same up to round-off: line for line the same text
    between their numbers, and numbers within `ROUNDOFF_ABS` or `ROUNDOFF_REL`."""
    return len(shown) == len(got) and all(_same_line(a, b) for a, b in zip(shown, got))


def _same_line(shown: str, got: str) -> bool:
    if shown == got:
        return True
    if NUMBER.split(shown) != NUMBER.split(got):
        return False
    pairs = [(float(a), float(b)) for a, b in zip(NUMBER.findall(shown), NUMBER.findall(got))]
    return all(abs(a - b) <= max(ROUNDOFF_ABS, ROUNDOFF_REL * max(abs(a), abs(b))) for a, b in pairs)


def outputs(block: Block, result) -> list[tuple[int, int, str]]:
    """(start, end, actual text) for each output range of the block."""
    text, _ = result
    if block.kind == "doctest":
        return [(start, end, out) for (_, start, end), out in zip(block.code, text)]
    return [(block.start, block.end, text)]


def compare(block: Block, lines: list[str], result) -> list[str]:
    """Diff lines for every output of the block that does not match the page."""
    problems = []
    if block.kind == "file":
        return []
    if block.options.get("run-only"):
        return [] if result[1] else [f"the snippet failed:\n{result[0]}"]
    for start, end, actual in outputs(block, result):
        expected = normalise("\n".join(line[len(block.indent):] for line in lines[start:end]), block.options)
        got = normalise(actual, block.options)
        if block.options.get("head"):
            got = got[:len(expected)]
        if not agree(expected, got):
            problems.append("\n".join(difflib.unified_diff(expected, got, "page", "real output", lineterm="", n=1)))
    return problems


def update(page: Path, done: list) -> None:
    """Replace the output ranges of `page` that differ with the real output (bottom up, so
    ranges stay valid); an output that differs only in timings and round-off is left as it is."""
    lines = page.read_text(encoding="utf-8").splitlines()
    for block, result in sorted(done, key=lambda d: -d[0].start):
        if block.options.get("run-only") or block.kind == "file":
            continue
        for start, end, actual in sorted(outputs(block, result), key=lambda o: -o[0]):
            shown = normalise("\n".join(line[len(block.indent):] for line in lines[start:end]), block.options)
            got = normalise(actual, block.options)
            if agree(shown, got[:len(shown)] if block.options.get("head") else got):
                continue
            new = actual.rstrip("\n").splitlines() if actual.strip() else []
            if block.options.get("head"):
                new = new[:end - start]
            lines[start:end] = [(block.indent + line).rstrip() for line in new]
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")


def pages(paths=None) -> list[Path]:
    if paths:
        return [Path(p).resolve() for p in paths]
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def snapshot() -> dict[str, tuple[int, int]]:
    """(size, modification time) of every file of the checkout, to tell whether a run wrote into it."""
    found = {}
    for folder, names, files in os.walk(ROOT):
        names[:] = [n for n in names if not any(Path(n).match(p) for p in UNTRACKED)]
        for name in files:
            stat = os.stat(os.path.join(folder, name))
            found[os.path.relpath(os.path.join(folder, name), ROOT)] = (stat.st_size, stat.st_mtime_ns)
    return found


def written(before: dict, after: dict) -> list[str]:
    """Files of the checkout that appeared or changed between two snapshots."""
    return sorted(name for name, stat in after.items() if before.get(name) != stat)


def check(paths=None, fast: bool = False, write: bool = False, times: bool = False, out=sys.stdout) -> int:
    """Check (or with `write`, update) the pages; returns the number of blocks that differ or wrote
    into the checkout."""
    runner, counts = Runner(), {"checked": 0, "slow": 0, "skipped": 0}
    try:
        failures = sum(_check_page(runner, page, fast, write, times, out, counts) for page in pages(paths))
    finally:
        shutil.rmtree(runner.scratch.parent)
    print(f"docs check: {counts['checked']} blocks run, {failures} differ, {counts['slow']} slow ones left out "
          f"(--fast), {counts['skipped']} marked skip", file=out)
    return failures


def _check_page(runner, page, fast, write, times, out, counts) -> int:
    """Run one page's blocks; returns how many differ from the page or wrote into the checkout
    (the checkout's files before and after each block: a file edited meanwhile by hand shows too)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    done, failures = [], 0
    for block in blocks(page):
        if "skip" in block.options or (fast and "slow" in block.options):
            counts["slow" if "skip" not in block.options else "skipped"] += 1
            continue
        result = runner.run(block)
        counts["checked"] += block.kind != "file"
        done.append((block, result))
        where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}:{block.fence}"
        seen, runner.seen = runner.seen, snapshot()
        stray = written(seen, runner.seen)
        if stray:
            failures += 1
            print(f"{where}: wrote into the checkout (write to the working folder instead): {', '.join(stray)}",
                  file=out)
        if times:
            print(f"{runner.seconds.get((block.kind, json.dumps(block.code)), 0):7.2f} s  {where}  "
                  f"{str(block.code)[:70]!r}", file=out)
        problems = compare(block, lines, result)
        if problems and not write:
            failures += 1
            print(f"{where}: output differs from the page ({block.kind}: {str(block.code)[:60]!r})", file=out)
            for problem in problems:
                print(problem, file=out)
    if write and done:
        update(page, done)
        runner.seen = snapshot()
    return failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="pages to check (default: README.md and docs/**/*.md)")
    parser.add_argument("--fast", action="store_true", help="leave out blocks marked slow")
    parser.add_argument("--update", action="store_true", help="rewrite the pages with the real output")
    parser.add_argument("--times", action="store_true", help="print how long each block took")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    return 1 if check(args.pages, args.fast, args.update, args.times) else 0


if __name__ == "__main__":
    sys.exit(main())
