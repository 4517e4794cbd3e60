"""Terms of one linear form (ppl.infer.linear) that read the same latent the same way, summed into one.

The moments of a linear form take its terms as independent under mean field. Two terms reading
coordinates of one MvNormal (`b[1] + b[2] * x`) are not: q correlates them. Summed, they are one
contraction b · (1, x), which q's covariance enters, as in `X @ b`; `a + a * x` is a · (1 + x).
"""

from __future__ import annotations

import numpy as np

from ppl.infer.access import Unsupported
from ppl.lang import ast


def merged(terms: list, expr: ast.Expr) -> list:
    """Terms with the same latent reads summed into one: `b[1] + b[2] * x` reads coordinates of b
    that q correlates, so they are one contraction b · (1, x), and `a + a * x` is a · (1 + x); the
    terms are then independent under mean field. A read left in two terms (`s * b[1] + b[2]`) would
    be taken as two independent ones, and a latent times itself (`a * a`) as a product of two: refused."""
    out = []
    for term in terms:
        same = next((t for t in out if _same_reads(t, term)), None)
        if same is None:
            out.append(term)
        else:
            same.coef = same.coef + term.coef
    seen = []
    for term in out:
        reads = term.reads()
        square = next((r for i, r in enumerate(reads) if any(_same_read(r, o) for o in reads[i + 1:])), None)
        if square is not None:  # `a * a * x`: E[a a] is not E[a] E[a]
            raise Unsupported(f"`{ast.text(expr)}` multiplies `{square.name}` by itself: the mean is not linear in "
                              f"`{square.name}`, as a Gaussian mean must be", expr.span)
        read = next((r for r in reads if any(_same_read(r, other) for other in seen)), None)
        if read is not None:
            raise Unsupported(f"`{ast.text(expr)}` reads `{read.name}` in two terms that are not one multiple of "
                              f"each other; q correlates them, and the engine would take them as independent: "
                              f"write the mean with `{read.name}` read once (an MvNormal's coordinates as "
                              f"`X @ {read.name}`, with a column of ones for an intercept)", expr.span)
        seen += reads
    return out


def _same_reads(a, b) -> bool:
    """Whether two terms read the same latents the same way, so that their coefficients add."""
    if a.contract != b.contract or a.vector2 is not None or b.vector2 is not None or len(a.scalars) != len(b.scalars):
        return False
    if (a.vector is None) != (b.vector is None) or (a.vector is not None and not _same_read(a.vector, b.vector)):
        return False
    key = lambda r: r.name  # noqa: E731
    return all(_same_read(u, v) for u, v in zip(sorted(a.scalars, key=key), sorted(b.scalars, key=key)))


def _same_read(u, v) -> bool:
    """Whether two reads gather the same elements of one variable at every plate element."""
    return (u.name == v.name and u.selector is None and v.selector is None and u.index.shape == v.index.shape
            and np.array_equal(u.index, v.index))
