"""Fuzzing the front end: whatever text comes in, only a `ppl.PplError` may come out.

(a) random token soup built from the language's own tokens, names, numbers and junk
    characters, fed to `ppl.compile`;
(b) valid models (embedded below, so the test does not move when the shipped examples do)
    mutated at the token or the character level: tokens deleted, duplicated, swapped or
    replaced, characters deleted, inserted or replaced;
(c) syntactically valid random programs (declarations, loops, `~` and `=` statements with
    random expressions), which get past the parser and exercise the checker and analyzer.

Models that still compile are also turned into a factor graph and analysed (no data), since
those stages run on every `ppl check`. Any exception that is not a `PplError` fails the test:
it is a crash, which the CLI reports as an internal error (exit 3).

(d) end to end: the documentation's models, mutated (rules, constants, numbers), with data drawn
    from their declarations and perturbed (empty cells, inf, nan, 1e300, negative counts, text,
    one row), through `check`, three sweeps of `infer` and the workflow on the posterior (the
    report, save and load, draws, predict and score, ArviZ; the plots of one case in ten)
    (tests/fuzz_inputs.py; a long run of the same, with every case's plots, is benchmarks/fuzz.py).

Every run is derandomized: CI explores the same examples each time.

Known crashes found by these tests are pinned below as explicit regression cases.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzz_inputs
from model_texts import CHAIN, MIXTURE
import ppl
from ppl.infer.factors.joint import key_variable

FAST = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
END_TO_END = settings(max_examples=300, deadline=None, derandomize=True,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# ---- seed models ------------------------------------------------------------------------

GMM = MIXTURE

KALMAN = CHAIN

REGRESSION = """\
const D = 3
data x: real[N, D] from x1..x3
data y: real[N] from "target value"
data g: cat(G)[N]
w ~ MvNormal(zeros(D), 0.5 * eye(D))
tau ~ Gamma(1.0, 1e-2)
for j in 1..G { b[j] ~ Normal(0, sd=2) }
for n in 1..N {
  m[n] = dot(w, x[n]) + b[g[n]]
  y[n] ~ Normal(m[n], tau) @vmp;
}
"""

SEEDS = [GMM, KALMAN, REGRESSION]


def _compiles(text: str) -> None:
    """Compile, build the graph and analyse; only `PplError` may escape."""
    try:
        model = ppl.compile(text)
        model.graph()
        model.analyze()
    except ppl.PplError:
        pass


def test_seed_models_are_valid():
    for text in SEEDS:
        model = ppl.compile(text)
        assert model.checked.factors, "a seed must be a valid model with factors"
        model.analyze()


# ---- (a) token soup ---------------------------------------------------------------------

KEYWORDS = ["const", "data", "for", "in", "from", "real", "int", "bool", "cat"]
DISTRIBUTIONS = ["Normal", "MvNormal", "Gamma", "Wishart", "Dirichlet", "Beta", "Categorical",
                 "Bernoulli", "Binomial", "Poisson", "Exponential", "Multinomial", "Gama"]
FUNCTIONS = ["exp", "log", "sqrt", "logistic", "probit", "softmax", "dot", "sum", "rbf",
             "zeros", "ones", "eye"]
NAMES = ["x", "y", "z", "mu", "tau", "N", "K", "D", "T", "n", "k", "t", "pi", "w", "sd", "var",
         "step", "samples"]
NUMBERS = ["0", "1", "2", "3", "10", "0.5", "1.0", "1e3", "2.5e-1", "0.0", "00", "99999999999999999999"]
PUNCT = ["~", "=", "(", ")", "[", "]", "{", "}", ",", ":", ";", "..", "@", "+", "-", "*", "/", "^"]
ANNOTATIONS = ["@vmp", "@cvi", "@ncvmp", "@jaakkola", "@laplace", "@cvi(samples=4)", "@cvii"]
JUNK = ["<", "<-", "!", "'", "$", "μ", "\t", "\n", "#", "//", '"col"', '"', "\\", "\x00", "\ufeff"]
VOCAB = KEYWORDS + DISTRIBUTIONS + FUNCTIONS + NAMES + NUMBERS + PUNCT + ANNOTATIONS + JUNK

SEPARATORS = st.sampled_from([" ", " ", " ", "\n", ""])


@st.composite
def token_soup(draw):
    tokens = draw(st.lists(st.sampled_from(VOCAB), max_size=40))
    seps = draw(st.lists(SEPARATORS, min_size=len(tokens), max_size=len(tokens)))
    return "".join(t + s for t, s in zip(tokens, seps))


@FAST
@given(token_soup())
def test_token_soup_raises_only_ppl_errors(text):
    _compiles(text)


# ---- (b) mutated valid models -----------------------------------------------------------

_TOKEN = re.compile(r'\s+|"[^"\n]*"|[A-Za-z_][A-Za-z_0-9]*|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|\.\.|#[^\n]*|.',
                    re.S)

REPLACEMENTS = VOCAB + ["x[n]", "x[t-1]", "x[t+1]", "x[0]", "[1, 2]", "[[1, 0], [0, 1]]", "-1", "0",
                        "1..N", "for n in 1..N {", "}", "N", "D"]


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


@st.composite
def token_mutation(draw):
    toks = tokens(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        if not toks:
            break
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "insert"]))
        i = draw(st.integers(0, len(toks) - 1))
        if op == "delete":
            del toks[i]
        elif op == "duplicate":
            toks.insert(i, toks[i])
        elif op == "swap":
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
        elif op == "replace":
            toks[i] = draw(st.sampled_from(REPLACEMENTS))
        else:
            toks.insert(i, " " + draw(st.sampled_from(REPLACEMENTS)) + " ")
    return "".join(toks)


@st.composite
def char_mutation(draw):
    text = list(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "insert", "replace"]))
        i = draw(st.integers(0, len(text) - 1))
        char = draw(st.sampled_from(list("~=()[]{},:;.@+-*/^ \n0123456789xyzNKT_\"#<!'")))
        if op == "delete":
            del text[i]
        elif op == "insert":
            text.insert(i, char)
        else:
            text[i] = char
    return "".join(text)


def test_tokenizer_round_trips():
    for text in SEEDS:
        assert "".join(tokens(text)) == text


@FAST
@given(token_mutation())
def test_token_mutations_raise_only_ppl_errors(text):
    _compiles(text)


@FAST
@given(char_mutation())
def test_character_mutations_raise_only_ppl_errors(text):
    _compiles(text)


# ---- (c) syntactically valid random programs -------------------------------------------
# Drawn from a seed with `random.Random` (much faster than composing strategies); each program
# declares its sizes and reads only names defined before, so most get deep into the checker.

HEADER = """\
const K = 3
const D = 2
const v = [0.2, 0.3, 0.5]
data y: real[N]
data c: cat(K)[N]
data b: bool[N]
data m: int[N]
data X: real[N, D]
"""
DATA_NAMES = {"y": 1, "c": 1, "b": 1, "m": 1, "X": 2, "v": 1}


def random_program(seed: int) -> str:
    rnd = random.Random(seed)
    names: dict[str, int] = dict(DATA_NAMES)  # name -> number of indices it takes
    lines = [HEADER]

    def expr(depth, loop):
        r = rnd.random()
        if depth == 0 or r < 0.3:
            choice = rnd.random()
            if choice < 0.35:
                return rnd.choice(["0", "1", "2", "0.5", "-1", "1e-3", "0.0", "K", "D", "N"])
            name = rnd.choice(sorted(names))
            if names[name] and loop and rnd.random() < 0.8:
                index = rnd.choice([loop, loop, f"{loop}-1", f"{loop}+1", "1", "c[" + loop + "]", "0", "2.5"])
                return f"{name}[{index}]"
            return name
        if r < 0.55:
            return f"({expr(depth - 1, loop)} {rnd.choice('+-*/@^')} {expr(depth - 1, loop)})"
        if r < 0.6:
            return f"-{expr(depth - 1, loop)}"
        if r < 0.85:
            fn = rnd.choice(FUNCTIONS)
            if fn in ("zeros", "ones", "eye"):
                return f"{fn}({rnd.choice(['K', 'D', '2', 'N', '0', 'D, D', 'x'])})"
            count = {"dot": 2, "rbf": 3}.get(fn, 1) + (rnd.choice([-1, 1]) if rnd.random() < 0.1 else 0)
            return f"{fn}({', '.join(expr(depth - 1, loop) for _ in range(max(count, 0)))})"
        return "[" + ", ".join(expr(depth - 1, loop) for _ in range(rnd.randint(1, 3))) + "]"

    def statement(i, loop):
        define = rnd.random() < 0.25
        target = rnd.choice(["y", "b", "m", "X"]) if not define and rnd.random() < 0.15 else f"v{i}"
        lhs = f"{target}[{loop}]" if loop else target
        hidden = names.pop(target, None)  # a statement does not read its own target
        if define:
            line = f"{lhs} = {expr(3, loop)}"
        else:
            dist = rnd.choice(DISTRIBUTIONS[:-1])
            arity = {"Dirichlet": 1, "Categorical": 1, "Bernoulli": 1, "Poisson": 1,
                     "Exponential": 1}.get(dist, 2) + (rnd.choice([-1, 1]) if rnd.random() < 0.1 else 0)
            args = [expr(2, loop) for _ in range(max(arity, 0))]
            if rnd.random() < 0.15:
                args[-1:] = [f"{rnd.choice(['sd', 'var', 'cov', 'rate'])}={expr(1, loop)}"]
            note = rnd.choice(["", "", "", " @cvi", " @vmp", " @ncvmp", " @jaakkola", " @laplace",
                               " @cvi(samples=4)", " @bohning", " @stick", " @delta", " @piecewise"])
            line = f"{lhs} ~ {dist}({', '.join(args)}){note}"
        names[target] = hidden if hidden is not None else (1 if loop else 0)
        return line

    for i in range(rnd.randint(1, 6)):
        if rnd.random() < 0.5:
            loop, bound = rnd.choice([("n", "1..N"), ("k", "1..K"), ("t", "2..N"), ("d", "1..D")])
            body = [statement(f"{i}_{j}", loop) for j in range(rnd.randint(1, 3))]
            lines.append(f"for {loop} in {bound} {{\n  " + "\n  ".join(body) + "\n}")
        else:
            lines.append(statement(str(i), None))
    return "\n".join(lines) + "\n"


@FAST
@given(st.integers(0, 2**32 - 1))
def test_random_programs_raise_only_ppl_errors(seed):
    _compiles(random_program(seed))


# ---- (d) end to end: check, infer and the workflow on models with data ------------------

MODELS = fuzz_inputs.corpus()


def test_corpus_holds_the_documented_models():
    assert len(MODELS) >= 40


@END_TO_END
@given(seed=st.integers(0, 2**32 - 1))
def test_check_infer_and_the_workflow_raise_only_ppl_errors(seed, tmp_path_factory):
    """The plots of one case in ten: drawing a PNG costs ten times the rest of the workflow."""
    text, csv = fuzz_inputs.case(seed, MODELS)
    fuzz_inputs.run_case(text, csv, tmp_path_factory.mktemp("case"), plot=seed % 10 == 0)


# ---- crashes found by these tests, pinned -----------------------------------------------

def test_kmeans_seeding_on_data_near_the_float_limit(tmp_path):
    """Found by (d): a mixture's data with a value of -1e300 made the k-means++ probabilities
    NaN (squared distances overflow); the farthest point is taken instead, and the run ends in
    a located error at the first factor whose ELBO term is not finite."""
    path = tmp_path / "data.csv"
    path.write_text("y\n0.5\n-1e300\n0.2\n1.5\n")
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(fuzz_inputs.MIXTURE_1D).infer(path, seed=0, max_iter=5)
    assert error.value.code == "E500" and error.value.span.line in (4, 6)  # the prior of mu, or y


def test_lark_match_examples_crash_is_gone():
    """Found by (b): Lark 1.3.1's match_examples raised TypeError formatting a debug message;
    ppl.lang.syntax_errors now matches examples itself."""
    text = ("data y: bool[T]\na ~ Normal(0, 1)\nx[11 ~ Normal(0, ])\nfor t in 2..T {\n"
            "  x[t] ~ Normal(a * x[t-1], 10.0)\n}\n")
    with pytest.raises(ppl.ModelError):
        ppl.compile(text)


def test_zero_to_a_negative_power_is_a_model_error():
    with pytest.raises(ppl.ModelError):
        ppl.compile("mu ~ Normal(0, 0^-1)")


def test_overflowing_constant_is_a_model_error():
    with pytest.raises(ppl.ModelError):
        ppl.compile("const big = 10.0^400\nmu ~ Normal(0, big)")


def _csv(tmp_path, text: str):
    path = tmp_path / "data.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize("model, data", [
    # a chain whose start is 1e300: its natural parameters overflow
    ("data y: bool[T]\na ~ Normal(0, 1)\nx[1] ~ Normal(1e300, 1)\nfor t in 2..T {\n  x[t] ~ Normal(a * x[t-1], 10.0)\n}\n"
     "for t in 1..T {\n  y[t] ~ Bernoulli(logistic(x[t]))\n}\n", "y\n1\n0\n1\n1\n"),
    # a coefficient of 1e8 on the lag: the chain's precision is not PD in floating point
    ("data y: bool[T]\nfor t in 1..T {\n  y[t] ~ Bernoulli(logistic(x[t]))\n}\nx[1] ~ Normal(0, 1)\n"
     "for t in 2..T {\n  x[t] ~ Normal(a * x[t-1], 10.0)\n}\na ~ Normal(1e8, 1)\n", "y\n1\n0\n1\n0\n1\n1\n"),
    # a mixture's data point at 1e300: a component's precision is not PD
    (MIXTURE, "eruptions,waiting\n-1.2244,1.5547\n0.5343,1.3962\n1e300,-1\n"),
    # seed 2054461: a covariate of 1e300 sends NaN to a Gaussian block, whose q is keyed `[b, w]`
    ("data X: real[N, D]\ndata y: bool[N]\nw: real[D] ~ MvNormal(zeros(D), eye(D))\nb ~ Normal(0, 0.1)\n"
     "eta = X @ w + b\ny ~ Bernoulli(logistic(eta))\nblock (b, w)\n", "X1,X2,X3,X4,y\n1e300,-3.5828,-0.3985,-2.2144,1\n"),
])
def test_numerical_breakdown_is_a_located_error(model, data, tmp_path):
    """Found by (d): overflowing natural parameters ended in LinAlgError or ValueError inside a
    family. Now q's breakdown is E502 at a statement drawing the variable whose moments failed,
    or, caught a step earlier, E500 at the factor whose ELBO term is not finite."""
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(model).infer(_csv(tmp_path, data), seed=0, max_iter=3)
    assert error.value.code in ("E502", "E500") and error.value.span is not None
    if error.value.code == "E502":
        name = key_variable(error.value.message.partition("q(")[2].partition(") broke down")[0])  # `[b, w]`: b
        assert error.value.span.source.line(error.value.span.line)[error.value.span.column - 1:].startswith(name)


def test_normal_likelihood_with_a_minibatch_is_refused(tmp_path):
    """Found by (d): `y ~ Normal(mu, 1) @cvi(minibatch=2)` broadcast the full precision against
    the minibatch's rows."""
    model = "data y: real[N]\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1) @cvi(minibatch=2)\n"
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(model).infer(_csv(tmp_path, "y\n1.0\n2.0\n0.5\n"), seed=0)
    assert error.value.code == "E500" and error.value.span.line == 3 and "minibatch" in error.value.message


def test_monte_carlo_sample_count_must_fit_in_memory():
    """Found by (d): `@cvi(samples=1e300)` reached numpy's random generator."""
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile("data y: bool[N]\nw ~ Normal(0, 1)\ny ~ Bernoulli(logistic(w)) @cvi(samples=1e300)\n")
    assert error.value.code == "E275" and (error.value.span.line, error.value.span.column) == (3, 41)


def test_poisson_dirichlet_rate_with_no_positive_count_runs(tmp_path):
    """Found by (d): with every count zero no row reads log π, and the row sum over no rows failed."""
    model = ("const K = 3\ndata spectrum: real[N, K] from (s1, s2, s3)\ndata count: int[N]\npi ~ Dirichlet(ones(K))\n"
             "for n in 1..N {\n  count[n] ~ Poisson(dot(pi, spectrum[n]))\n}\n")
    post = ppl.compile(model).infer(_csv(tmp_path, "s1,s2,s3,count\n1,2,3,0\n0.5,1,2,0\n"), seed=0, max_iter=20)
    assert post.elbo < 0 and abs(post["pi"].mean.sum() - 1) < 1e-9


def test_same_draws_solve_with_coinciding_draws_is_least_squares():
    """Found by (d): draws that coincide made the Jacobian mean singular (LinAlgError); the
    solve falls back to least squares, and to NaN (rejected by the guarded update) where it is
    not finite."""
    from ppl.infer.pathwise import same_draws_solve
    dt = np.zeros((2, 4, 2, 2))
    dt[..., 0, 0] = 1.0  # rank one: the second parameter moves nothing
    df = np.ones((2, 4, 2))
    dt[1, 0, 1, 1] = np.nan
    out = same_draws_solve(dt, df)
    np.testing.assert_allclose(out[0], [1.0, 0.0])
    assert np.isnan(out[1]).all()


def test_breakdown_of_a_joint_group_is_located_at_its_mean(tmp_path):
    """Found by (d): the E502 of a @joint Normal–Wishart q, whose state is named `(mu, Lambda)`,
    looked that name up among the variables (KeyError)."""
    from ppl.infer.fitting import variable_span as _variable_span
    checked = ppl.compile(MIXTURE).checked
    assert _variable_span(checked, "(mu, Lambda)") == checked.variables["mu"].span


def test_constant_index_past_the_data_is_located(tmp_path):
    """Found by (d): `x[100] ~ ...` over three rows failed in numpy's ravel_multi_index."""
    model = ("data y: bool[T]\na ~ Normal(0, 1)\nx[100] ~ Normal(0, 1)\nfor t in 2..T {\n  x[t] ~ Normal(a * x[t-1], 10.0)\n}\n"
             "for t in 1..T {\n  y[t] ~ Bernoulli(logistic(x[t]))\n}\n")
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(model).infer(_csv(tmp_path, "y\n0\n0\n0\n"), seed=0, max_iter=3)
    assert error.value.code == "E503" and (error.value.span.line, error.value.span.column) == (3, 1)


@pytest.mark.parametrize("text", ["data W: real[N, 0]\nmu ~ Normal(0, 1)\n",
                                  "const K = 0\ndata W: real[N, K]\nmu ~ Normal(0, 1)\n"])
def test_zero_width_data_is_a_model_error(text):
    """Found by (d): `real[N, 0]` passed the checker and failed in the reader (np.stack of nothing)."""
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(text)
    assert error.value.code == "E217" and error.value.span.line == text.count("\n", 0, text.index("data")) + 1


@pytest.mark.parametrize("pieces, element, how", [
    ("z[2] ~ Categorical(pi)\nfor t in 2..T {\n  z[t] ~ Categorical(A[z[t-1]])\n}\n", "z[1]", "by no statement"),
    ("z[1] ~ Categorical(pi)\nz[2] ~ Categorical(pi)\nfor t in 2..T {\n  z[t] ~ Categorical(A[z[t-1]])\n}\n",
     "z[2]", "by 2 statements"),
    ("for t in 2..T {\n  z[t] ~ Categorical(pi)\n}\n", "z[1]", "by no statement")])
def test_elements_drawn_twice_or_never_are_located(pieces, element, how, tmp_path):
    """Found by (d), seed 224800: a mutated factorial HMM drew z1[2] twice (`z1[2] ~ ...` beside
    `for t in 2..T`) and z1[1] never; the checker cannot see it when a bound is a data size, and
    the scatter of messages failed in np.bincount."""
    model = ("const K = 2\ndata y: real[T]\npi ~ Dirichlet(ones(K))\nfor k in 1..K {\n  A[k] ~ Dirichlet(ones(K))\n"
             "  w[k] ~ Normal(0, 0.1)\n}\n" + pieces + "for t in 1..T {\n  y[t] ~ Normal(w[z[t]], 1.0)\n}\n")
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(model).infer(_csv(tmp_path, "y\n2.0\n2.4\n1.0\n"), seed=0, max_iter=3)
    assert error.value.code == "E504" and f"`{element}` is drawn {how}" in error.value.message


def test_overflowing_joint_prior_is_located_at_its_statement(tmp_path):
    """Found by (d), seed 206366: `beta0 = 1e300` in a @joint Normal–Gamma prior overflowed its
    natural parameters, and the constant log-partition's Cholesky raised LinAlgError."""
    model = ("const beta0 = 1e300\ndata y: real[N]\ntau ~ Gamma(0.5, 0.0005)\nmu ~ Normal(70.0, beta0 * tau) @joint\n"
             "for n in 1..N {\n  y[n] ~ Normal(mu, tau)\n}\n")
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(model).infer(_csv(tmp_path, "y\n-0.96\n0.44\n2.09\n"), seed=0, max_iter=3)
    assert error.value.code == "E502" and error.value.span.line == 4


def test_cvi_on_a_vectorised_normal_likelihood_runs(tmp_path):
    """Found by (d) after cvi's ELBO came from its draws: `y ~ Normal(w * x, 1) @cvi(form=site)`,
    a statement without a loop, sent its plate-shaped precision into blocks of flattened rows
    (a broadcast error). A Gaussian likelihood's expectations are exact: no draws."""
    model = "data x: real[N]\ndata y: real[N]\nw ~ Normal(0, 1)\ny ~ Normal(w * x, 1) @cvi(form=site)\n"
    rows = "x,y\n" + "".join(f"{x},{0.5 * x + 0.1 * (-1) ** i}\n" for i, x in enumerate(np.linspace(-2, 2, 20)))
    post = ppl.compile(model).infer(_csv(tmp_path, rows), seed=0)
    x = np.linspace(-2, 2, 20)
    y = 0.5 * x + 0.1 * (-1) ** np.arange(20)
    precision = 1.0 + x @ x  # the exact Gaussian posterior of w
    assert post["w"].mean == pytest.approx((x @ y) / precision, abs=1e-4)


def test_a_precision_that_no_cholesky_survives_is_held_in_data_space(tmp_path):
    """Found by (d), seed 648709: `Normal(X @ w + b, 1e300)` over one row; w's q, solved by
    Woodbury during the run, has a precision I + 1e300·x xᵀ whose Cholesky factor failed when the
    posterior was summarised (LinAlgError, then E502). q(w) is now held in data space: its sds
    (√(1 − x_d²/|x|²) to round-off, the prior less the one direction the row pins) and draws
    come without factoring that matrix."""
    model = ("const D = 3\ndata X: real[N, D] from x1..xD\ndata height: real[N]\nb ~ Normal(0, 1)\n"
             "w: real[D] ~ MvNormal(zeros(D), eye(D))\nheight ~ Normal(X @ w + b, 1e300)\n")
    data = _csv(tmp_path, "height,x1,x2,x3\n-2.3218,-1.4404,-1.6564,-2.2649\n")
    post = ppl.compile(model).infer(data, seed=0, max_iter=3)
    x = np.array([-1.4404, -1.6564, -2.2649])
    np.testing.assert_allclose(post["w"].sd, np.sqrt(1 - x * x / (x @ x)), rtol=1e-6)
    draws = post["w"].draws(500, np.random.default_rng(0))
    assert np.all(np.isfinite(draws)) and np.abs(draws @ x).max() < 1e-6  # no spread along x


@pytest.mark.parametrize("schedule", ["", "schedule svi(batch=100, passes=1)\n", "schedule svi(batch=1)\n"])
def test_a_stochastic_schedule_whose_elbo_is_not_finite_stops_as_a_batch_run_does(tmp_path, schedule):
    """Found by (d)'s workflow, seed 5300285: counts above their trials (y = 2 of n = 1) make a
    Binomial's ELBO NaN. A batch run stops with E500 at the statement; under `svi` each step's
    estimate went on as NaN, and the run ended "converged" at an ELBO of NaN, which saving
    could not write. Every schedule now stops at the same place."""
    model = ("data x: real[N]\ndata n: int[N]\ndata y: int[N]\na ~ Normal(0, 0.001)\nb ~ Normal(0, 0.001)\n"
             "for i in 1..N {\n  p[i] = logistic(a + b * x[i])\n  y[i] ~ Binomial(n[i], p[i])\n}\n")
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(schedule + model).infer(_csv(tmp_path, "x,n,y\n3.7294,1,2\n2.6064,0,1\n"), seed=0, max_iter=3)
    assert error.value.code == "E500" and error.value.span.line == 8 + schedule.count("\n")


@pytest.mark.parametrize("minibatch", ["schedule cvi(minibatch=2, step=0.5)\n", "@cvi(minibatch=2)"])
def test_a_minibatch_run_whose_exact_elbo_is_not_finite_stops_at_the_statement(tmp_path, minibatch):
    """Found by (d)'s workflow, seed 5301825: minibatch steps whose ELBO estimates, on rows without
    it, stayed finite while a covariate of 1e300 made the exact ELBO at the end NaN, and the run
    returned it. It now stops with E500 at the statement, as a batch run does."""
    schedule, rule = (minibatch, "") if minibatch.startswith("schedule") else ("", minibatch)
    model = (f"{schedule}data X: real[N, D] from x1..x2\ndata y: bool[N]\nw ~ MvNormal(zeros(D), eye(D))\n"
             f"y ~ Bernoulli(logistic(X @ w)) {rule}\n")
    rows = "x1,x2,y\n" + "".join(f"{np.sin(i)},{1e300 if i == 5 else np.cos(i)},{i % 2}\n" for i in range(20))
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(model).infer(_csv(tmp_path, rows), seed=0, max_iter=3)
    assert error.value.code == "E500" and error.value.span.line == 4 + bool(schedule)
