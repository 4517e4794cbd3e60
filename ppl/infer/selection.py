"""Which variables and elements a summary lists, and one line for each thing it leaves out.

Local variables (one per row, token or document: the analyzer's scopes) with more than
`LOCAL_LISTED` elements are not listed unless asked for by name or glob pattern
(`--vars 'z,mu*'`): the eight schools' `theta` is, the GMM's 272 `z` are not. A mixture component whose expected
count is below `OFF_COUNT` rows was switched off by the data and keeps its prior, so its rows
(of the weights and of every variable the category selects) are not listed either.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import numpy as np

from ppl.diagnostics import OptionError, nearest

OFF_COUNT = 0.5  # expected number of rows below which a component counts as switched off
LOCAL_LISTED = 20  # a local variable with more elements than this is summarised in one line
CATEGORIES = ("Categorical", "CategoricalChain")  # families whose mean holds each element's category probabilities


def patterns(vars) -> list[str] | None:  # noqa: A002
    """`"mu,sigma*"` or `["mu", "sigma*"]` → a list of glob patterns; None stays None."""
    if vars is None:
        return None
    items = vars.split(",") if isinstance(vars, str) else list(vars) if isinstance(vars, (list, tuple, set)) else None
    if items is None or not all(isinstance(p, str) for p in items):
        raise OptionError("E340", f"vars={vars!r}: give variable names or glob patterns, as one comma-separated text "
                          "or a list of texts")
    return [p.strip() for p in items if p.strip()]


def chosen(posterior, vars=None) -> list[str]:  # noqa: A002
    """Names of the variables to list, in the posterior's order."""
    names = list(posterior.marginals)
    if vars is None:
        return [n for n in names if not _hidden(posterior, n)]
    wanted = matched(vars, names)
    return [n for n in names if any(fnmatchcase(n, p) for p in wanted)]


def matched(vars, names: list) -> list[str]:  # noqa: A002
    """The patterns of `vars`, each matching one of `names`; else E340 at the first that does not
    (`ppl infer` asks before the fit with the model's names, so a typo costs no run)."""
    wanted = patterns(vars)
    if not wanted:
        raise OptionError("E340", f"--vars {vars!r}: no pattern given",
                          expected=f"one of {', '.join(names)} (glob patterns such as mu* allowed)")
    for pattern in wanted:
        if not any(fnmatchcase(n, pattern) for n in names):
            close = nearest(pattern, names)
            raise OptionError("E340", f"--vars {pattern}: no variable matches",
                              expected=f"one of {', '.join(names)} (glob patterns such as mu* allowed)",
                              hint=f"did you mean {close}?" if close else None)
    return wanted


def held(posterior, vars) -> tuple[list | None, list[str]]:  # noqa: A002
    """The patterns of `vars` (checked against the model's names before the fit) that match a
    variable of the posterior (None if none does: the default listing), and a note for each that
    does not: a local of a run that keeps the globals only, or data without an empty cell."""
    kept, notes = [], []
    for pattern in patterns(vars):
        if any(fnmatchcase(n, pattern) for n in posterior.marginals):
            kept.append(pattern)
            continue
        data = [n for n in getattr(posterior, "observed", ()) if fnmatchcase(n, pattern)]
        why = "data without an empty cell have no q" if data else \
            "a streamed or cluster run keeps the global variables only"
        notes.append(f"--vars {pattern}: `{', '.join(data) or pattern}` is not in this posterior: {why}")
    return kept or None, notes


def component_counts(posterior, selector: str) -> np.ndarray:
    """Expected number of rows in each component: Σ_n q(z_n = k)."""
    probs = np.asarray(posterior.marginals[selector].mean, dtype=float)
    return probs.reshape(-1, probs.shape[-1]).sum(axis=0)


def off_components(posterior) -> dict:
    """{selector: 0-based indices of its switched-off components} (selectors with any)."""
    found = {}
    for selector in posterior.components:
        off = np.flatnonzero(component_counts(posterior, selector) < OFF_COUNT)
        if off.size:
            found[selector] = off
    return found


def off_mask(posterior, name: str) -> np.ndarray:
    """True at the elements of `name`'s mean that belong to a switched-off component."""
    shape = np.shape(posterior.marginals[name].mean)
    mask = np.zeros(shape, dtype=bool)
    for selector, off in off_components(posterior).items():
        axis = posterior.components[selector].get(name)
        if axis is not None:
            index = [slice(None)] * len(shape)
            index[axis] = off
            mask[tuple(index)] = True
    return mask


def omitted(posterior, vars=None) -> list[str]:  # noqa: A002
    """One line per local variable not listed, and per selector with switched-off components."""
    shown = set(chosen(posterior, vars))
    lines = []
    for name, m in posterior.marginals.items():
        if name not in shown and _hidden(posterior, name):
            count = int(np.prod(_plates(m)))
            lines.append(f"{name}: {count} local {m.name}, not listed; --vars {name} to show")
    for selector, off in off_components(posterior).items():
        members = [v for v in posterior.marginals if v in posterior.components[selector] and v in shown]
        if members:
            lines.append(f"{selector}: components {', '.join(str(k + 1) for k in off)} switched off (expected "
                         f"count < {OFF_COUNT} rows); their {', '.join(members)} keep the prior, not listed")
    return lines


def _hidden(posterior, name: str) -> bool:
    """A local variable too long to list by default."""
    return posterior.scopes.get(name) == "local" and np.prod(_plates(posterior.marginals[name])) > LOCAL_LISTED


def _plates(marginal) -> tuple:
    """Shape of the variable's plates (one q per element): its mean's without the event axes."""
    shape = np.shape(marginal.mean)
    if marginal.name in CATEGORIES:  # the mean holds the probabilities of each category
        return shape[:-1]
    event = len(getattr(getattr(marginal, "family", None), "event_shape", ()))
    return shape[:len(shape) - event]
