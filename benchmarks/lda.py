"""LDA on a real corpus: held-out document completion and fit time, ppl against a numpy floor,
scikit-learn (batch and online) and gensim, in one run with one BLAS thread.

Corpus: the Reuters sample of the `lda` package (395 documents, 4,258 words, 84,010 tokens).
Documents are split 80/20 with a fixed seed; every contender fits K = 20 topics with α = 0.1 and
η = 0.01 on the training documents. Each test document's tokens are split in two halves (odd
and even positions); the topic proportions are fitted on one half with the topics fixed, and the
score is the per-word log-likelihood of the other half, log Σ_k θ̄_k β̄_kw. The fold-in and
the score are one numpy function shared by all contenders (the mean topics β̄ of each are its
only input), so the table compares topics, not fold-in code.

- ppl: models/lda.vim with the vocabulary fixed (`V` a constant), batch VMP, `svi`, `ssmf_a`
  and `ssmf` schedules;
- floor: a hand-written numpy batch VMP on the same token list (the algorithm of ppl's batch
  run: responsibilities of every token, then document and topic Dirichlets, one sweep each);
- scikit-learn `LatentDirichletAllocation` (batch and online, learning_decay 0.7);
- gensim `LdaModel` (online VB, chunks of the whole corpus, passes 20).

Writes the section "## LDA (document completion)" of docs/benchmarks.md.

    python3 benchmarks/lda.py [--no-write] [--only NAME,...]
    python3 benchmarks/lda.py --eta-grid [--passes 5]    # the η table (SVI, SSMF-A, SSMF)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this script is named lda.py: keep its folder off the path so `import lda` finds the package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, write_section  # noqa: E402  (sets one BLAS thread)

import numpy as np  # noqa: E402
from scipy.special import digamma, logsumexp  # noqa: E402

K, ALPHA, ETA, SEED = 20, 0.1, 0.01, 0
MODEL = (ROOT / "models" / "lda.vim").read_text().replace("const K = 10", f"const K = {K}")


def corpus():
    """(train counts, test counts) as documents × words, split 80/20 by a seeded permutation."""
    import lda.datasets
    counts = np.asarray(lda.datasets.load_reuters())
    order = np.random.default_rng(SEED).permutation(len(counts))
    cut = int(0.8 * len(counts))
    return counts[order[:cut]], counts[order[cut:]]


def tokens(counts):
    """Long format: one (document, word) pair per token, 0-based."""
    doc, word = np.nonzero(counts)
    repeat = counts[doc, word]
    return np.repeat(doc, repeat), np.repeat(word, repeat)


def halves(counts):
    """Each document's tokens alternately into an observed half and a held-out half."""
    doc, word = tokens(counts)
    position = np.arange(len(doc)) - np.searchsorted(doc, doc)
    seen, held = np.zeros_like(counts), np.zeros_like(counts)
    np.add.at(seen, (doc[position % 2 == 0], word[position % 2 == 0]), 1)
    np.add.at(held, (doc[position % 2 == 1], word[position % 2 == 1]), 1)
    return seen, held


def completion(topics, seen, held, sweeps=200):
    """Per-word held-out log-likelihood: θ̄ of each document by VB on its observed half with the
    topics fixed (exp E[log θ] iterations from a uniform start), then log Σ_k θ̄_k β̄_kw."""
    beta = topics / topics.sum(axis=1, keepdims=True)
    gamma = np.full((len(seen), K), ALPHA + seen.sum(axis=1, keepdims=True) / K)
    for _ in range(sweeps):
        theta = np.exp(digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True)))
        norm = theta @ beta + 1e-300
        gamma = ALPHA + theta * ((seen / norm) @ beta.T)
    mean = gamma / gamma.sum(axis=1, keepdims=True)
    return float(np.sum(held * np.log(mean @ beta + 1e-300)) / held.sum())


# ---- contenders: each returns the topic matrix (K × V), not normalised

def fit_ppl(train, schedule=None, eta=ETA):
    import ppl
    doc, word = tokens(train)
    model = ppl.compile(MODEL.replace("const eta = 0.01", f"const eta = {eta}\nconst V = {train.shape[1]}"))
    post = model.infer({"doc": doc + 1, "word": word + 1}, seed=SEED, schedule=schedule, max_iter=5000)
    return post["beta"].mean, post


def fit_floor(train, sweeps):
    """Batch VMP for LDA on the token list, the update order of ppl's batch run."""
    doc, word = tokens(train)
    rng = np.random.default_rng(SEED)
    resp = rng.dirichlet(np.ones(K), size=len(doc))
    d, v = train.shape
    for _ in range(sweeps):
        lam = ETA + np.stack([np.bincount(word, resp[:, k], minlength=v) for k in range(K)])
        gam = ALPHA + np.stack([np.bincount(doc, resp[:, k], minlength=d) for k in range(K)], axis=1)
        elog_beta = digamma(lam) - digamma(lam.sum(axis=1, keepdims=True))
        elog_theta = digamma(gam) - digamma(gam.sum(axis=1, keepdims=True))
        logits = elog_theta[doc] + elog_beta[:, word].T
        resp = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    return lam


def fit_sklearn(train, method):
    from sklearn.decomposition import LatentDirichletAllocation
    model = LatentDirichletAllocation(n_components=K, doc_topic_prior=ALPHA, topic_word_prior=ETA,
                                      learning_method=method, max_iter=50 if method == "batch" else 20,
                                      batch_size=32, random_state=SEED, evaluate_every=-1)
    model.fit(train)
    return model.components_


def fit_gensim(train):
    from gensim.models import LdaModel
    doc, word = np.nonzero(train)
    corpus_ = [[(int(w), int(train[i, w])) for w in word[doc == i]] for i in range(len(train))]
    model = LdaModel(corpus_, num_topics=K, id2word={i: str(i) for i in range(train.shape[1])}, alpha=[ALPHA] * K,
                     eta=ETA, passes=20, iterations=100, chunksize=len(corpus_), random_state=SEED)
    return model.get_topics()


def run(only: set | None):
    train, test = corpus()
    seen, held = halves(test)
    floor_sweeps = None
    contenders = [
        ("ppl batch vmp", lambda: fit_ppl(train)),
        ("numpy floor (batch vmp)", None),
        ("ppl svi(batch=32, passes=20)", lambda: fit_ppl(train, "svi(batch=32, passes=20)")),
        ("ppl ssmf_a(batch=32, passes=20)", lambda: fit_ppl(train, "ssmf_a(batch=32, passes=20)")),
        ("ppl ssmf(batch=32, passes=20)", lambda: fit_ppl(train, "ssmf(batch=32, passes=20)")),
        ("scikit-learn batch", lambda: fit_sklearn(train, "batch")),
        ("scikit-learn online", lambda: fit_sklearn(train, "online")),
        ("gensim", lambda: fit_gensim(train)),
    ]
    rows = []
    for name, fit in contenders:
        if only and not any(o in name for o in only):
            continue
        if fit is None:
            if floor_sweeps is None:
                continue
            fit = (lambda s=floor_sweeps: fit_floor(train, s))
        start = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fit()
        cpu, wall = time.process_time() - start[0], time.perf_counter() - start[1]
        topics, post = result if isinstance(result, tuple) else (result, None)
        if name == "ppl batch vmp":
            floor_sweeps = post.iterations
        note = f"{post.iterations} {'steps' if 'batch vmp' not in name else 'sweeps'}" if post is not None else \
            (f"{floor_sweeps} sweeps" if "floor" in name else "")
        rows.append((name, completion(topics, seen, held), cpu, wall, note))
        print(f"{name:26s} held-out {rows[-1][1]:.4f} nats/word  cpu {cpu:7.2f} s  wall {wall:7.2f} s  {note}",
              flush=True)
    return rows, train, test


def table(rows, train, test) -> str:
    lines = [f"## LDA (document completion)\n",
             f"`python3 benchmarks/lda.py`, one run, one BLAS thread; {machine()}.\n",
             f"Reuters (the `lda` package): {len(train)} training and {len(test)} test documents, "
             f"{train.shape[1]} words, {int(train.sum())} training tokens; K = {K}, α = {ALPHA}, η = {ETA}. "
             "Held-out: per-word log-likelihood of every test document's second half given its first "
             "(one shared fold-in, so only the topics differ). Higher is better.\n",
             "| contender | held-out nats/word | CPU s | wall s | iterations |", "|---|---|---|---|---|"]
    for name, score, cpu, wall, note in rows:
        lines.append(f"| {name} | {score:.4f} | {cpu:.2f} | {wall:.2f} | {note} |")
    return "\n".join(lines) + "\n"


ETAS = (0.01, 0.03, 0.1, 0.3, 1.0)
M_STEPS = ("svi", "ssmf_a", "ssmf")


def eta_grid(passes: int) -> str:
    """Held-out score of each M-step over the topic prior η (Hoffman 2014, Sec. 4: SSMF is less
    sensitive to η than mean-field SVI), and the time per step relative to SVI's."""
    train, test = corpus()
    seen, held = halves(test)
    scores, seconds = {}, {}
    for step in M_STEPS:
        for eta in ETAS:
            start = time.process_time()
            topics, post = fit_ppl(train, f"{step}(batch=32, passes={passes})", eta)
            seconds[step, eta] = (time.process_time() - start) / post.iterations
            scores[step, eta] = completion(topics, seen, held)
            print(f"{step:7s} eta {eta:5g}  held-out {scores[step, eta]:.4f}  {1000 * seconds[step, eta]:.1f} ms/step",
                  flush=True)
    lines = ["## LDA: sensitivity to the topic prior η\n",
             f"`python3 benchmarks/lda.py --eta-grid`, one BLAS thread; {machine()}. The corpus and score of the "
             f"table above; minibatches of 32 documents, {passes} passes, the mean-field E-step. Held-out "
             "nats/word (higher is better), then CPU time per step relative to `svi`'s.\n",
             "| M-step | " + " | ".join(f"η = {e:g}" for e in ETAS) + " | range | time per step |",
             "|---|" + "---|" * (len(ETAS) + 2)]
    for step in M_STEPS:
        row = [scores[step, e] for e in ETAS]
        cost = np.mean([seconds[step, e] / seconds["svi", e] for e in ETAS])
        lines.append(f"| {step} | " + " | ".join(f"{v:.4f}" for v in row) + f" | {max(row) - min(row):.4f} | {cost:.2f}× |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--only", default=None, help="comma-separated substrings of contender names")
    parser.add_argument("--eta-grid", action="store_true", help="the η table of SVI, SSMF-A and SSMF instead")
    parser.add_argument("--passes", type=int, default=5, help="passes per run of the η table")
    args = parser.parse_args(argv)
    if args.eta_grid:
        text = eta_grid(args.passes)
        print(text)
        if not args.no_write:
            write_section(text, "## LDA: sensitivity to the topic prior η", ROOT / "docs" / "benchmarks.md")
        return
    rows, train, test = run(set(args.only.split(",")) if args.only else None)
    text = table(rows, train, test)
    print(text)
    if not args.no_write:
        write_section(text, "## LDA (document completion)", ROOT / "docs" / "benchmarks.md")


if __name__ == "__main__":
    main()
