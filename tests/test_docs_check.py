"""The docs check: every page's commands print what the page shows (blocks marked slow aside:
`python tests/docs_check.py` runs those too), and the checker itself catches a changed output,
forgives timings and rewrites a page with --update."""

import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import docs_check  # noqa: E402

PAGE = """# A page

```console
$ ppl infer models/beta_bernoulli.vim models/beta_bernoulli.csv --seed 0
model models/beta_bernoulli.vim, data models/beta_bernoulli.csv
ELBO -10.083306 after 2 sweeps (converged), 9.99 s; rules: vmp
stopped at: ELBO change 0, est. 0 nats from the fixed point; largest mean change 0 sd

variable  family  mean    sd       2.5%    97.5%
--------  ------  ------  -------  ------  ------
theta     Beta    0.8182  0.08042  0.6366  0.9455
```

```python
>>> import ppl
>>> post = ppl.load("models/beta_bernoulli.vim").infer("models/beta_bernoulli.csv", seed=0)
>>> print(round(post["theta"].mean, 4))
0.8182
```

<!-- docs-check: file=coin.vim -->
```ppl
data y: bool[N]
theta ~ Beta(2, 2)
y ~ Bernoulli(theta)
```

<!-- docs-check: head -->
```console
$ ppl infer coin.vim models/beta_bernoulli.csv
model coin.vim, data models/beta_bernoulli.csv
```
"""


def run(tmp_path, text, **options):
    page = tmp_path / "page.md"
    page.write_text(text)
    out = io.StringIO()
    return docs_check.check([page], out=out, **options), out.getvalue(), page


def test_every_page_prints_what_it_shows():
    out = io.StringIO()
    failures = docs_check.check(fast=True, out=out)
    assert failures == 0, out.getvalue()
    assert "differ" in out.getvalue()


def test_a_true_page_passes_and_timings_do_not_count(tmp_path):
    failures, out, _ = run(tmp_path, PAGE)
    assert failures == 0, out
    assert "3 blocks run, 0 differ" in out  # two commands and one doctest session (the file is written)


@pytest.mark.parametrize("old,new", [("0.8182  0.08042", "0.8183  0.08042"), ("\n0.8182\n", "\n0.8181\n"),
                                     ("model coin.vim,", "model coin2.vim,")])
def test_a_changed_output_fails_and_update_repairs_it(tmp_path, old, new):
    assert old in PAGE
    failures, out, page = run(tmp_path, PAGE.replace(old, new))
    assert failures == 1 and "output differs from the page" in out
    assert new.strip() in out  # the diff shows the page's line
    failures, _, page = run(tmp_path, PAGE.replace(old, new), write=True)
    text = page.read_text()
    assert old in text and new not in text
    # a rewritten output carries its real timing; an output that matched is left as it was
    assert ("9.99 s" in text) == (old != "0.8182  0.08042")
    failures, out, _ = run(tmp_path, text)
    assert failures == 0, out


def test_round_off_does_not_count_and_a_real_change_does(tmp_path):
    """Another CPU prints a converged run's ELBO change as -2.8e-13 where this one prints 0: that
    agrees; a mean change of 2e-06 sd where the run prints 0 does not."""
    stopped = "ELBO change 0, est. 0 nats from the fixed point; largest mean change 0 sd"
    assert stopped in PAGE
    noise = stopped.replace("change 0, est. 0", "change -2.8e-13, est. 1.1e-14")
    failures, out, page = run(tmp_path, PAGE.replace(stopped, noise), write=True)
    assert failures == 0, out
    assert noise in page.read_text()  # --update leaves a page that agrees as it is
    moved = stopped.replace("mean change 0 sd", "mean change 2e-06 sd")
    assert run(tmp_path, PAGE.replace(stopped, moved))[0] == 1


def test_digits_marker_compares_floats_to_that_many_digits(tmp_path):
    page = PAGE.replace("0.8182  0.08042", "0.81824  0.080416")
    assert run(tmp_path, page)[0] == 1
    assert run(tmp_path, page.replace("```console\n$ ppl infer models", "<!-- docs-check: digits=4 -->\n"
                                      "```console\n$ ppl infer models", 1))[0] == 0


WRITER = """# A page that writes files

<!-- docs-check: file=models/coin.vim -->
```ppl
data y: bool[N]
theta ~ Beta(2, 2)
y ~ Bernoulli(theta)
```

```console
$ ppl infer models/coin.vim models/beta_bernoulli.csv --seed 0 --output coin.json --quiet
$ echo 1 > models/beta_bernoulli.csv && echo 2 > models/new.csv
```
"""


def test_commands_write_into_a_copy_not_the_checkout(tmp_path):
    model_data = docs_check.ROOT / "models" / "beta_bernoulli.csv"
    before = model_data.read_text()
    failures, out, _ = run(tmp_path, WRITER)
    assert failures == 0, out
    assert model_data.read_text() == before
    assert not any((docs_check.ROOT / name).exists() for name in ("coin.json", "models/coin.vim", "models/new.csv"))


def test_a_command_that_writes_into_the_checkout_fails(tmp_path):
    stray = docs_check.ROOT / "docs-check-stray.txt"
    try:
        failures, out, _ = run(tmp_path, f"```console\n$ touch {stray}\n```\n")
    finally:
        stray.unlink(missing_ok=True)
    assert failures == 1 and "wrote into the checkout" in out and stray.name in out
