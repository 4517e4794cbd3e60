"""What of a logistic fit is engine and what is algorithm: ppl's time per sweep and set-up against
the floor's (benchmarks/logistic_floor.py), set-up cancelled, and the time each takes to the same ELBO.

- Per sweep: (T(M2) − T(M1)) / (M2 − M1) for runs of exactly M1 and M2 plain sweeps (ppl through
  `Model.infer` with SQUAREM off and tolerances that never stop it; the floor with a tolerance it
  never meets), each T the contender's least CPU time over the interleaved rounds; M2 stays below
  the sweep where ppl's ELBO stops changing (past it ppl's monitor measures the mean change every
  sweep). Set-up is T(M1) − M1 × the time per sweep: for ppl binding the data, building the factor
  graph, the first ELBO and the posterior; for the floor XXᵀ (D > N).
- To the same ELBO: the floor's default run stops when a sweep moves its ELBO by at most 1e-6 nats;
  ppl's default run stops at a fixed point of both the ELBO and the means, which takes a few more
  sweeps to confirm. So both are also timed to the floor's final ELBO: ppl with its defaults
  (SQUAREM where it applies) and `max_iter` set to the first sweep whose ELBO reaches it.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import logistic_floor as floor

PAIRS = (("ncvmp", "ncvmp"), ("bound:jaakkola", "jaakkola"))  # (ppl rule, floor rule)
EXACT = dict(tol=1e-300, mean_tol=1e-300, accelerate=False)  # plain sweeps, exactly max_iter of them
M1, M2_MAX = 2, 12
SHORT = 0.05  # CPU seconds of calls each timing takes at least: a run of milliseconds is timed several times


def cpu(fn) -> float:
    """The least CPU time of `fn` over as many calls as fill SHORT seconds (one call when it takes
    longer), so that a fit of milliseconds is not at the mercy of one scheduler tick."""
    best, spent = np.inf, 0.0
    while spent < SHORT:
        start = time.process_time()
        fn()
        took = time.process_time() - start
        best, spent = min(best, took), spent + took
    return best


def _ppl(model, data, rule, m, **options):
    return model.infer(data, seed=0, methods={"y": rule}, max_iter=m, **options)


def sweeps_below_flat(model, data, rule) -> int:
    """M2: the last sweep before ppl's plain ELBO repeats itself exactly (at most M2_MAX)."""
    trace = _ppl(model, data, rule, M2_MAX + 2, **EXACT).trace
    flat = next((i for i in range(1, len(trace)) if trace[i] == trace[i - 1]), len(trace))
    return max(min(M2_MAX, flat - 1), M1 + 1)


def measure(model, train, repeat: int) -> list[dict]:
    """Per rule: ms per sweep and set-up of ppl and the floor, and both timed to the same ELBO."""
    x, y = train
    data = {"X": x, "y": y.astype(int)}
    out = []
    for rule, floor_rule in PAIRS:
        m2 = sweeps_below_flat(model, data, rule)
        final = floor.run(x, y, floor_rule, tol=1e-6)[0]
        target = final[-1] - 1e-9 * abs(final[-1])  # the floor's converged ELBO, to rounding
        trace = _ppl(model, data, rule, 300).trace
        reach = next((i + 1 for i, e in enumerate(trace) if e >= target), None)
        runs = {"ppl": {m: (lambda m=m: _ppl(model, data, rule, m, **EXACT)) for m in (M1, m2)},
                "floor": {m: (lambda m=m: floor.run(x, y, floor_rule, tol=-1.0, max_sweeps=m)) for m in (M1, m2)}}
        runs["ppl"]["reach"] = lambda: _ppl(model, data, rule, reach)
        runs["floor"]["reach"] = lambda: floor.run(x, y, floor_rule, tol=1e-6)
        best = {c: {k: np.inf for k in fns} for c, fns in runs.items()}
        for round_ in range(repeat):
            order = list(runs) if round_ % 2 == 0 else list(runs)[::-1]
            for contender in order:
                for key, fn in runs[contender].items():
                    best[contender][key] = min(best[contender][key], cpu(fn))
        row = {"rule": rule, "sweeps": (M1, m2), "reach": (reach, len(final)), "target": final[-1]}
        for contender, t in best.items():
            sweep = (t[m2] - t[M1]) / (m2 - M1)
            row[contender] = {"sweep": sweep, "setup": t[M1] - M1 * sweep, "reach": t["reach"]}
        out.append(row)
    return out


def table(name: str, rows: list[dict]) -> tuple[list, list]:
    """Markdown rows (per sweep, set-up, to the same ELBO) and verdict lines for one problem."""
    lines, verdicts = [], []
    for r in rows:
        p, f = r["ppl"], r["floor"]
        ratio = p["sweep"] / f["sweep"]
        lines.append([name, r["rule"], f"{r['sweeps'][0]}→{r['sweeps'][1]}", f"{1e3 * p['sweep']:.3f}",
                      f"{1e3 * f['sweep']:.3f}", f"{ratio:.2f}×", f"{1e3 * p['setup']:.1f}", f"{1e3 * f['setup']:.1f}",
                      f"{r['target']:.6f}", f"{r['reach'][0]} / {r['reach'][1]}",
                      f"{1e3 * p['reach']:.1f} / {1e3 * f['reach']:.1f}", f"{p['reach'] / f['reach']:.2f}×"])
        verdicts.append(f"{'PASS' if ratio <= 1.3 else 'FAIL'}: {name}: ppl {r['rule']} takes {ratio:.2f}× the floor's "
                        f"CPU time per sweep, set-up cancelled (target ≤ 1.3×); its set-up is "
                        f"{1e3 * p['setup']:.1f} ms against the floor's {1e3 * f['setup']:.1f} ms, and to the floor's "
                        f"final ELBO it takes {p['reach'] / f['reach']:.2f}× the floor's CPU time")
    return lines, verdicts


HEAD = ("| problem | ppl rule | sweeps M1→M2 | ppl ms / sweep | floor ms / sweep | per-sweep ratio | ppl set-up ms | "
        "floor set-up ms | floor's final ELBO | sweeps to it, ppl / floor | CPU ms to it, ppl / floor | ratio |")
