"""LDA at scale in batch mode: peak memory on a 1M-token corpus, and where the time goes.

1. A synthetic corpus drawn from the LDA generative process (K = 20 topics, α = 0.1, η = 0.01,
   V = 10,000 words, D = 2,000 documents of 500 tokens: 1,000,000 tokens), written twice: one row
   per token (doc, word) and one row per (document, word) with its count (doc, word, count,
   fitted with `data count: weight[N]`). Each is fitted in batch mode (every document every
   sweep) for --sweeps sweeps in a fresh process, which reports its peak RSS (getrusage). The
   one-hot array of `word` that ppl used to allocate would be N × V × 8 bytes = 80 GB.
2. The Reuters corpus of the `lda` package (`lda.datasets.load_reuters()`: 395 documents,
   4,258 words, 84,010 tokens), one row per token, K = 20, fitted to convergence: the time of
   each stage before the first sweep (parse and check, bind the CSV, analyse, build the
   problem, initialise) against the sweeps. Without the `lda` package the synthetic corpus cut
   to 84,000 tokens stands in, and the table says so.

Every stage runs in its own process, one BLAS thread. Timings are noisy on a shared machine.
Writes the section "## LDA at scale (batch)" of docs/benchmarks.md.

    python3 benchmarks/lda_memory.py [--sweeps 10] [--tokens 1000000] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, write_section  # noqa: E402  (before numpy: one BLAS thread)

import numpy as np  # noqa: E402

DOC = ROOT / "docs" / "benchmarks.md"
TITLE = "## LDA at scale (batch)"
K, ALPHA, ETA = 20, 0.1, 0.01

MODEL = """const K = {k}
const alpha = {alpha}
const eta = {eta}
data doc: cat(D)[N]
data word: cat(V)[N]
{weight}
for d in 1..D {{ theta[d] ~ Dirichlet(alpha * ones(K)) }}
for k in 1..K {{ beta[k] ~ Dirichlet(eta * ones(V)) }}
for t in 1..N {{
  z[t] ~ Categorical(theta[doc[t]])
  word[t] ~ Categorical(beta[z[t]])
}}
"""

# The child: each stage timed, the peak RSS of the process at the end (kB on Linux).
CHILD = """
import json, resource, sys, time
import numpy as np
import ppl
from ppl.infer import Options, build_problem, run
from ppl.infer.initialise import initialise
model_path, data_path, sweeps = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = {}
t = time.perf_counter()
model = ppl.load(model_path); times["parse + check"] = time.perf_counter() - t; t = time.perf_counter()
dataset = model.bind(data_path); times["bind"] = time.perf_counter() - t; t = time.perf_counter()
analysis = model.analyze(dataset); times["analyse"] = time.perf_counter() - t; t = time.perf_counter()
problem = build_problem(model.checked, dataset, analysis); times["build"] = time.perf_counter() - t
t = time.perf_counter()
initialise(problem, np.random.default_rng(0)); times["initialise"] = time.perf_counter() - t
t = time.perf_counter()
result = run(problem, Options(max_iter=sweeps, seed=0))
times["sweeps"] = time.perf_counter() - t - times["initialise"]  # run() initialises once too
print(json.dumps({"times": times, "iterations": result.iterations, "converged": result.converged,
                  "elbo": result.elbo, "rows": int(problem.shapes["z"][0]),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def synthetic(tokens: int, vocabulary: int, docs: int, seed: int = 0) -> np.ndarray:
    """Document × word counts drawn from the LDA generative process (D × V)."""
    rng = np.random.default_rng(seed)
    beta = rng.dirichlet(np.full(vocabulary, ETA), size=K)
    theta = rng.dirichlet(np.full(K, ALPHA), size=docs)
    per_doc = np.full(docs, tokens // docs)
    per_doc[: tokens - per_doc.sum()] += 1
    topics = rng.multinomial(per_doc, theta)  # tokens of each topic in each document, D × K
    counts = np.zeros((docs, vocabulary), dtype=np.int64)
    for k in range(K):
        counts += rng.multinomial(topics[:, k], beta[k])
    return counts


def write_corpus(counts: np.ndarray, folder: Path, name: str) -> tuple[Path, Path]:
    """(one row per token, one row per document and word with its count) CSV files."""
    doc, word = np.nonzero(counts)
    n = counts[doc, word]
    grouped = folder / f"{name}_counts.csv"
    _write(grouped, "doc,word,count", np.column_stack([doc + 1, word + 1, n]))
    tokens = folder / f"{name}_tokens.csv"
    _write(tokens, "doc,word", np.column_stack([np.repeat(doc + 1, n), np.repeat(word + 1, n)]))
    return tokens, grouped


def _write(path: Path, header: str, rows: np.ndarray) -> None:
    np.savetxt(path, rows, fmt="%d", delimiter=",", header=header, comments="")


def models(folder: Path) -> tuple[Path, Path]:
    text = dict(k=K, alpha=ALPHA, eta=ETA)
    tokens, weighted = folder / "lda_tokens.vim", folder / "lda_counts.vim"
    tokens.write_text(MODEL.format(weight="", **text))
    weighted.write_text(MODEL.format(weight="data count: weight[N]", **text))
    return tokens, weighted


def measure(model: Path, data: Path, sweeps: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(model), str(data), str(sweeps)], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def reuters():
    try:
        import lda.datasets
    except ImportError:
        return None
    return np.asarray(lda.datasets.load_reuters())


STAGES = ("parse + check", "bind", "analyse", "build", "initialise")


def memory_table(runs: list[tuple[str, dict]]) -> str:
    lines = ["| data | rows | sweeps | s per sweep | before the first sweep (s) | peak RSS |",
             "|------|-----:|-------:|------------:|---------------------------:|---------:|"]
    for label, r in runs:
        before = sum(r["times"][s] for s in STAGES)
        lines.append(f"| {label} | {r['rows']:,} | {r['iterations']} | {r['times']['sweeps'] / r['iterations']:.2f} "
                     f"| {before:.1f} | {r['peak_mb']:,.0f} MB |")
    return "\n".join(lines)


def stage_table(r: dict) -> str:
    total = sum(r["times"].values())
    lines = ["| stage | seconds | share of the run |", "|-------|--------:|-----------------:|"]
    for stage in STAGES + ("sweeps",):
        lines.append(f"| {stage} | {r['times'][stage]:.3f} | {100 * r['times'][stage] / total:.1f}% |")
    before = sum(r["times"][s] for s in STAGES)
    lines.append(f"| **before the first sweep** | **{before:.3f}** | **{100 * before / total:.1f}%** |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        token_model, count_model = models(folder)
        counts = synthetic(args.tokens, 10_000, 2_000)
        tokens, grouped = write_corpus(counts, folder, "synthetic")
        runs = [("synthetic, one row per token", measure(token_model, tokens, args.sweeps)),
                ("synthetic, doc,word,count", measure(count_model, grouped, args.sweeps))]
        real = reuters()
        label = "Reuters (`lda` package)"
        if real is None:
            label = "synthetic stand-in (the `lda` package is not installed)"
            real = synthetic(84_000, 4_258, 395, seed=1)
        small_tokens, small_grouped = write_corpus(real, folder, "reuters")
        timing = measure(token_model, small_tokens, 500)
        weighted = measure(count_model, small_grouped, 500)
    before = sum(timing["times"][s] for s in STAGES)
    text = "\n".join([
        TITLE, "",
        f"`python3 benchmarks/lda_memory.py --sweeps {args.sweeps} --tokens {args.tokens}` on {machine()}, "
        "one BLAS thread, each fit in a fresh process; a shared machine, so timings are noisy.",
        "",
        f"**Memory.** LDA (K = {K}, α = {ALPHA}, η = {ETA}) on a corpus drawn from its generative process: "
        f"{args.tokens:,} tokens, V = 10,000 words, D = 2,000 documents, fitted in batch mode for "
        f"{args.sweeps} sweeps. The observed words stay integer codes; a one-hot array of them would be "
        f"N × V × 8 bytes = {args.tokens * 10_000 * 8 / 1e9:,.0f} GB. Peak RSS is the whole process "
        "(Python, numpy, the CSV read, every array of the fit).",
        "",
        memory_table(runs),
        "",
        f"**Where the time goes.** {label}: {real.sum():,} tokens, {real.shape[0]} documents, "
        f"{real.shape[1]:,} words, K = {K}, one row per token, fitted to convergence "
        f"({timing['iterations']} sweeps, ELBO {timing['elbo']:.1f}). The stages before the first sweep take "
        f"{100 * before / sum(timing['times'].values()):.1f}% of the run.",
        "",
        stage_table(timing),
        "",
        f"The same corpus as doc,word,count rows ({weighted['rows']:,} rows): {weighted['iterations']} sweeps at "
        f"{weighted['times']['sweeps'] / weighted['iterations']:.3f} s against "
        f"{timing['times']['sweeps'] / timing['iterations']:.3f} s per sweep for one row per token "
        f"(ELBO {weighted['elbo']:.1f}; a different random start, so a different local optimum).",
        "",
    ])
    print(text)
    if not args.no_write:
        write_section(text, TITLE, DOC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
