"""Starting points: every latent variable from its prior message (dependency order), narrowed
where that prior makes a non-conjugate likelihood's margins too wide to start from, then the
symmetry of mixtures broken by k-means++ seeding on the data a latent category selects for,
or by random responsibilities when that data is not a point cloud, the symmetry of bilinear
terms (factor models, `dot(lam[j], z[n])`) by means drawn from q, and that of a factor's
exchangeable components by the factor (`break_symmetry`)."""

from __future__ import annotations

import functools

import numpy as np

from ppl.infer.access import sum_by_index
from ppl.infer.build import GLMFactor, SoftmaxFactor, observed_stats
from ppl.infer.linear import margin, take_rows
from ppl.infer.low_rank import Diagonal, GaussianSum
from ppl.infer.state import NumericalBreakdown, State
from ppl.infer.weights import element_counts

BLOCK = 65536  # entries of a rows × K × D block of k-means distances (512 KB)
WIDEST = 1e3  # the largest variance of a non-conjugate likelihood's margin at the start (sd ≈ 32)
MEASURED = 1024  # rows, evenly spaced, on which the start's margins are measured

_NEUTRAL = {
    "Normal": lambda f: f.natural(mean=0.0, precision=1.0),
    "NormalChain": lambda f: np.array([0.0, -0.5, 0.0]),
    "MvNormal": lambda f: f._join(np.zeros(f.dim), -0.5 * np.eye(f.dim)),  # N(0, I), no D × D products
    "Gamma": lambda f: f.natural(shape=1.0, rate=1.0),
    "Wishart": lambda f: f.natural(dof=f.dim + 1.0, scale=np.eye(f.dim)),
    "Dirichlet": lambda f: f.natural(alpha=np.ones(f.k)),
    "Beta": lambda f: f.natural(a=1.0, b=1.0),
    "Categorical": lambda f: f.natural(probs=np.full(f.k, 1.0 / f.k)),
    "CategoricalChain": lambda f: np.zeros(f.size),
    "GaussianBlock": lambda f: f.neutral(),
    "NormalWishart": lambda f: f.natural(mean=np.zeros(f.dim), beta=1.0, dof=f.dim + 1.0, scale=np.eye(f.dim)),
}


def initialise(problem, rng: np.random.Generator, skip=frozenset()) -> State:
    """The starting state: data observed, each latent from its own statement's message, categories
    that select components at random. `skip`: latents whose λ the caller sets before any read
    (a fused block's assignments, written by its E-step), left unset and drawing nothing."""
    state = State(problem.families, problem.shapes)
    state.counts = element_counts(problem.model, problem.dataset, problem.shapes)
    dataset = problem.dataset
    for name, values in dataset.arrays.items():
        if name in problem.families:
            family = problem.families[name]
            mask = dataset.masks.get(name)
            if family.name == "Categorical":  # codes, never a one-hot N × K array
                codes = np.asarray(values).reshape(-1)
                state.observe_codes(name, codes, None if mask is None else mask.reshape(-1))
                continue
            stats = observed_stats(family, values).reshape(-1, family.size)
            state.observe(name, stats, None if mask is None else _element_mask(mask, stats.shape[0]))
    latent = [n for n in problem.latent if n not in skip]
    for name in latent:
        family = problem.families[name]
        if name in problem.low_rank:  # N(0, I) held in data space: no D × D array; none when `_start` sets it
            if not problem.own(name):
                state.set(name, GaussianSum(Diagonal(np.zeros(family.dim), np.ones(family.dim))).solve(family))
            continue
        size = int(np.prod(problem.shapes[name], dtype=np.int64))
        state.set(name, np.broadcast_to(_NEUTRAL[family.name](family), (size, family.size)).copy())
    for name in latent:
        own = _own(problem, state, name)
        if own:
            _start(problem, state, name, own)
    _narrow(problem, state)
    _count_start(problem, state)
    for name in latent:
        if problem.families[name].name in ("Categorical", "CategoricalChain"):
            _break_symmetry(problem, state, name, rng)
    for name in sorted({n for f in problem.factors for n in f.bilinear}):
        _draw_mean(state, name, rng)
    for factor in problem.factors:
        if hasattr(factor, "break_symmetry"):  # exchangeable latent components, e.g. factorisations
            factor.break_symmetry(state, rng)
    return state


def _start(problem, state, name: str, sources: list) -> None:
    """q(name) from the sum of the messages `sources` (functions of `factored`): its own statements'
    and the start's sites. One message is kept as it is (a constant prior's array, met again each
    sweep); a diagonal Gaussian prior of a vector read through fewer data rows than its dimension
    starts in data space (ppl.infer.low_rank), with no D × D array or solve."""
    if name in problem.low_rank:
        _set_sum(state, name, sum((source(factored=True) for source in sources), GaussianSum()))
        return
    messages = [source(factored=False) for source in sources]
    state.set(name, messages[0] if len(messages) == 1 else sum(messages))


def _set_sum(state, name: str, total) -> None:
    """q(name) ← the `GaussianSum` `total`, held in a structured form when it solves so (ppl.infer.low_rank)."""
    start = total.solve(state.families[name], start=True)
    if start is not None:
        state.set(name, start, factored=total)
    else:
        state.set(name, total.dense())


def _narrow(problem, state) -> None:
    """Scale up the precision of the Gaussian latents a GLM or softmax likelihood reads, means kept,
    where their prior makes its margins wider than `WIDEST` (measured on `MEASURED` rows), so that
    the widest is `WIDEST`. A site from a margin of sd σ is a Newton step on a curvature of order
    1/σ: with covariates in dollars under N(0, I) (σ ≈ 4e4) the first NC-VMP step jumps ~1e5
    logits, and no damping of the natural parameters brings it back (the data's precision swamps
    any step). Scaling λ by s scales a Gaussian's precision by s and keeps its mean; the
    variance of a margin linear in the latents falls by s. A Gaussian block's λ (h, −J/2) scales
    the same way, as one q. Only the start: the fixed point is the same, and on the models in
    models/ (widest margins under 500) nothing changes."""
    for factor in problem.factors:
        if not isinstance(factor, (GLMFactor, SoftmaxFactor)):
            continue
        widest, reads = _widest_margin(factor, state)
        if not WIDEST < widest < np.inf:  # NaN (an unset read) too; data near 1e300 are reported by the run
            continue
        narrowed = []
        for name in reads:
            family = problem.families[name]
            if family.name not in ("Normal", "MvNormal", "GaussianBlock"):
                continue
            narrowed.append(f"`{name}`")
            total = state.factored.get(name)
            if total is None:
                state.set(name, state.natural[name] * (widest / WIDEST))
            else:  # held in data space (ppl.infer.low_rank): scaled as the sum it was solved from
                _set_sum(state, name, total.scaled(widest / WIDEST))
        if narrowed:
            state.notes.append(f"{', '.join(narrowed)} started narrowed: under the prior, the margins of "
                               f"`{factor.name}` have sd up to {np.sqrt(widest):.2g}, far wider than its link varies "
                               f"over (covariates on their own scale, such as dollars, make a N(0, 1) weight "
                               f"nearly flat; standardise them if that is not meant)")


def _widest_margin(factor, state) -> tuple[float, list]:
    """(the largest variance of `factor`'s margins under `state`, the latents they read, sorted).
    A likelihood that reads a Gaussian block (`BlockGLM`) is measured on every row, with the
    block's covariances; any other on `MEASURED` rows, evenly spaced."""
    if hasattr(factor, "block_key"):
        return float(np.max(factor._margin(state)[1], initial=0.0)), sorted(factor.margin_reads())
    forms = factor.forms if isinstance(factor, SoftmaxFactor) else [factor.margin]
    rows = np.unique(np.linspace(0, factor.plate.shape[0] - 1, MEASURED).astype(np.int64)) \
        if factor.plate.shape and factor.plate.shape[0] > MEASURED else None  # else every row
    widest = max(float(np.max(margin(state, form if rows is None else take_rows(form, rows)[0])[1], initial=0.0))
                 for form in forms)
    return widest, sorted({a.name for form in forms for a in form.reads()})


def _count_start(problem, state) -> None:
    """The Gaussian latents of a Poisson GLM start from their priors' messages plus the likelihood's
    sites at IRLS's start (`GLMFactor.start_message`), one Gauss–Seidel pass in sweep order: q then
    sees the counts' scale before the first step (e^η of η ≈ 0 against counts of 3,000 made the
    first Newton step overflow). A Gaussian block, whose members' priors all send to it, starts
    from all its other factors' messages plus those sites."""
    for factor in problem.factors:
        if not (isinstance(factor, GLMFactor) and factor.counts_start):
            continue
        for name in [n for n in problem.order if n in factor.reads]:
            family = problem.families[name]
            if family.name == "GaussianBlock":
                sources = [functools.partial(f.message, state, name) for f in problem.neighbours[name]
                           if f is not factor]
            elif family.name in ("Normal", "MvNormal"):
                sources = _own(problem, state, name)
            else:
                continue
            kept = state.keep([name])
            _start(problem, state, name, sources + [functools.partial(factor.start_message, state, name)])
            try:  # a block's moments are its own object: its λ and entropy say enough
                finite = bool(np.all(family.valid(state.natural[name]))) and np.isfinite(state.entropy(name)) \
                    and (family.name == "GaussianBlock" or bool(np.all(np.isfinite(state.moments(name)))))
            except NumericalBreakdown:
                finite = False
            if not finite:  # counts or covariates near 1e300: the prior's start, and the run reports them
                state.restore(kept)


def _own(problem, state, name: str) -> list:
    """The messages to `name` from its own statements, as functions of `factored`."""
    return [functools.partial(f.message, state, name) for f in problem.own(name)]


def _draw_mean(state, name: str, rng) -> None:
    """Moves the mean of q(name) to a draw from q, precision kept. In E[uᵀv] = E[u]ᵀE[v] the
    all-zero means of u and v are a saddle point: the message to u is proportional to E[v]."""
    family = state.families[name]
    natural = state.natural[name]
    precision = family.params(natural)["precision"]
    state.set(name, family.natural(mean=family.sample(natural, rng), precision=precision))


def _element_mask(mask: np.ndarray, elements: int) -> np.ndarray:
    """Observed per element: a row of an event (an MvNormal row) is observed only if all of it is."""
    return mask.reshape(elements, -1).all(axis=1)


def _break_symmetry(problem, state, name: str, rng) -> None:
    """Responsibilities for a latent category that selects mixture components."""
    family = problem.families[name]
    k = family.k
    size = state.natural[name].shape[0]
    points = _selected_data(problem, name)
    if points is None and family.name == "CategoricalChain":
        points = _local_frequencies(problem, name)
    if points is not None and points.shape[0] == size:
        labels = _kmeans(points, k, rng, state.counts.get(name))
        probs = np.full((size, k), 1e-3 / k)
        probs[np.arange(size), labels] += 1 - 1e-3
    else:
        probs = rng.dirichlet(np.ones(k), size=size)
    np.log(probs, out=probs)
    state.set(name, probs if family.size == k else  # a chain: independent rows to start from
              np.concatenate([probs, np.zeros((size, family.size - k))], axis=1))


def _selected_data(problem, name):
    """Observed real data drawn with parameters selected by `name`, one row per element of it."""
    for factor in problem.factors:
        if (factor.selector is not None and factor.selector.name == name) or name in getattr(factor, "choosers", ()):
            target = factor.factor.target.name
            values = problem.dataset.arrays.get(target)
            if values is not None and problem.families[target].name in ("Normal", "MvNormal"):
                return values.reshape(values.shape[0], -1).astype(float)
    return None


def _local_frequencies(problem, name, window: int = 10):
    """For a chain that selects the probabilities of observed categories: each row's category
    frequencies over the `window` rows around it. One category says little about the state; a
    run of rows says which state the chain was in (the loaded die of a casino)."""
    for factor in problem.factors:
        target = factor.factor.target.name
        if factor.selector is not None and factor.selector.name == name and target in problem.dataset.arrays \
                and problem.families[target].name == "Categorical":
            one_hot = problem.families[target].stats(np.asarray(problem.dataset.arrays[target]).reshape(-1))
            total = np.vstack([np.zeros((1, one_hot.shape[1])), np.cumsum(one_hot, axis=0)])
            rows = one_hot.shape[0]
            lo = np.clip(np.arange(rows) - window // 2, 0, max(rows - window, 0))
            hi = np.minimum(lo + window, rows)
            return (total[hi] - total[lo]) / (hi - lo)[:, None]
    return None


def _kmeans(points: np.ndarray, k: int, rng, weights=None, iterations: int = 10) -> np.ndarray:
    """k-means++ seeding and at most `iterations` Lloyd steps; returns a label per point. The
    steps end when the labels repeat: the means, and every later step, would then repeat too.
    `weights`: the row weights of the points (a point stands for that many), in the seeding and
    the means."""
    n = points.shape[0]
    w = np.ones(n) if weights is None else weights
    centres = [points[rng.integers(n) if weights is None else rng.choice(n, p=w / w.sum())]]
    for _ in range(1, k):
        d2 = w * _nearest(points, np.array(centres), np.min)
        total = d2.sum()
        if not np.isfinite(total):  # squared distances past 1e308 (data near 1e154 and beyond): the farthest
            centres.append(points[np.argmax(d2)])
        else:
            centres.append(points[rng.choice(n, p=d2 / total)] if total > 0 else points[rng.integers(n)])
    centres, last = np.array(centres), None
    for _ in range(iterations):
        labels = _nearest(points, centres, np.argmin)
        if last is not None and np.array_equal(labels, last):
            return labels
        last = labels
        mass = np.bincount(labels, weights=w, minlength=k)  # each centre's weighted mean, by sums over its points
        sums = sum_by_index(labels, w[:, None] * points, k)
        kept = mass > 0  # a centre no point chose stays where it is
        centres[kept] = sums[kept] / mass[kept, None]
    return _nearest(points, centres, np.argmin)


def _nearest(points: np.ndarray, centres: np.ndarray, reduce) -> np.ndarray:
    """`reduce` (np.min or np.argmin) over the centres of each point's squared distances, in
    blocks of rows: the same numbers as one expression over all rows, without its N × K × D
    temporaries (2.4 GB at 10⁷ points, K = 5, D = 2)."""
    n = points.shape[0]
    rows = max(1, BLOCK // centres.size)
    out = np.empty(n, dtype=np.intp if reduce is np.argmin else float)
    for lo in range(0, n, rows):
        block = points[lo:lo + rows]
        squares = (block[:, None, :] - centres[None]) ** 2
        # a sum over one coordinate is that coordinate
        out[lo:lo + rows] = reduce(squares[..., 0] if squares.shape[-1] == 1 else squares.sum(-1), axis=1)
    return out
