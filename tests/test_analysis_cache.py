"""A `Model` keeps its analyses: a refit on data of the same kind reuses the analysis it made
(an immutable value, equal to a fresh one), and data or options that change it get a new one."""

import numpy as np

import ppl
from ppl.api import ANALYSES
from ppl.graph import analyze

MODEL = """
data x: real[N]
data y: real[N]
a ~ Normal(0, 10)
b ~ Normal(0, 10)
y ~ Normal(a + b * x, 1)
"""


def data(n, missing=False):
    x = np.linspace(-1, 1, n)
    y = 1.0 + 2.0 * x
    if missing:
        y[1] = np.nan
    return {"x": x, "y": y}


def test_a_cached_analysis_is_the_fresh_one_and_follows_what_it_reads():
    model = ppl.compile(MODEL)
    complete = model.bind(data(20))
    first = model.analyze(complete)
    assert first == analyze(model.checked, complete)
    assert model.analyze(model.bind(data(35))) is first  # other rows, same kind: reused
    gaps = model.bind(data(20, missing=True))  # a response with an empty cell is imputed: new tags
    imputed = model.analyze(gaps)
    assert imputed == analyze(model.checked, gaps) and imputed != first
    assert any(t.variable == "y" for t in imputed.tags) and not any(t.variable == "y" for t in first.tags)
    by_rule = model.analyze(complete, {"y": "cvi"})
    assert by_rule == analyze(model.checked, complete, {"y": "cvi"}) and by_rule != first
    assert model.analyze(complete, None, "all") == analyze(model.checked, complete, None, "all")


def test_the_cache_keeps_the_latest_analyses_only():
    model = ppl.compile(MODEL)
    complete = model.bind(data(20))
    first = model.analyze(complete)
    for methods in (None, {"y": "cvi"}):
        for block in ("all", "none", "a", "b", "a,b", "b,a"):
            model.analyze(complete, methods, block)
    assert len(model._analyses) == ANALYSES < 13
    assert model.analyze(complete) is not first and model.analyze(complete) == first


def test_a_refit_with_the_cached_analysis_gives_the_first_fit():
    model = ppl.compile(MODEL)
    first = model.infer(data(30), seed=1)
    again = model.infer(data(30), seed=1)
    assert again.elbo == first.elbo and np.array_equal(again["b"].natural, first["b"].natural)


def test_a_rule_that_is_not_text_is_e282_not_a_traceback():
    """A `methods` value that cannot be a cache key (a list, a dict) is the unknown-rule error the
    analyzer gives any other bad rule, and nothing is cached."""
    model = ppl.compile(MODEL)
    for rule in (["vmp"], {"rule": "vmp"}, 3):
        try:
            model.infer(data(5), methods={"y": rule})
        except ppl.PplError as error:
            assert error.code == "E282" and "unknown rule" in error.message
        else:
            raise AssertionError(f"{rule!r} was taken as a rule")
    assert not model._analyses


def test_a_gaussian_block_that_is_not_text_is_e383_not_a_traceback():
    """`gaussian_block` takes "all", "none" or comma-separated names: a list or a dict is the
    option's error (E383), whether or not it can be a cache key, and nothing is cached."""
    model = ppl.compile(MODEL)
    for block in (["a", "b"], {"a": 1}, 1):
        try:
            model.infer(data(5), gaussian_block=block)
        except ppl.PplError as error:
            assert error.code == "E383" and "--gaussian-block" in error.message
        else:
            raise AssertionError(f"{block!r} was taken as a block")
    assert not model._analyses
