"""The Python API: `load` and `compile` give a `Model`; the CLI calls the same functions."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np

from ppl.diagnostics import ModelError
from ppl.lang import CheckedModel, check, parse


ANALYSES = 8  # analyses a `Model` keeps (by data kind and options)


class Model:
    """A checked model. Cheap to make; `with_constants` re-checks with overrides (`--set`)."""

    def __init__(self, text: str, name: str = "<string>", constants: dict | None = None):
        if not isinstance(text, str):
            raise ModelError("E001", f"cannot read a model from {_a(type(text).__name__)}: give its text as a str "
                             "(decode bytes first), or a path to ppl.load")
        self.text = text
        self.name = name
        self.checked: CheckedModel = check(parse(text, name), constants)
        self._analyses: dict = {}  # `analyze`'s answers by what they depend on, the last ANALYSES

    def with_constants(self, **constants) -> "Model":
        """A copy of this model with constants overridden, checked again."""
        return Model(self.text, self.name, {**self.checked.overrides, **constants})

    def with_checked(self, checked: CheckedModel) -> "Model":
        """A copy of this model with `checked` in place of its own (a grid node's, with h a
        constant), keeping its analyses apart: they are of `checked`."""
        part = copy.copy(self)
        part.checked, part._analyses = checked, {}
        return part

    def bind(self, data, source: str | None = None, na=None):
        """Data (CSV or Parquet path, DataFrame or dict of arrays) → a checked `Dataset`; `na`:
        more cell texts that mean "missing" (pandas' defaults always do)."""
        from ppl.data import bind
        return bind(self.checked, data, source, na)

    def graph(self, dataset=None):
        """The factor graph as a NetworkX DiGraph (shapes concrete when a dataset is given)."""
        from ppl.graph import build
        return build(self.checked, dataset)

    def analyze(self, dataset=None, methods: dict | None = None, gaussian_block: str | None = None):
        """The rule, with its reason, for every (factor, latent variable) edge. Kept per model: the
        analysis reads of the data only which responses have missing cells (`dataset.masks`), so a
        refit on new data of the same kind does not redo it (an `Analysis` is immutable)."""
        from ppl.graph import analyze
        key = (frozenset(dataset.masks) if dataset is not None else frozenset(),
               tuple((methods or {}).items()), gaussian_block)
        try:
            hash(key)
        except TypeError:  # a rule or block that is not text: no key, and `analyze` refuses it (E282)
            return analyze(self.checked, dataset, methods, gaussian_block)
        if key not in self._analyses:
            if len(self._analyses) >= ANALYSES:
                del self._analyses[next(iter(self._analyses))]  # the oldest
            self._analyses[key] = analyze(self.checked, dataset, methods, gaussian_block)
        return self._analyses[key]

    def check_report(self, data=None, methods: dict | None = None, schedule: str | None = None, na=None,
                     gaussian_block: str | None = None, grid: str | None = None) -> dict:
        """The `ppl check --format json` document."""
        from ppl.infer.grid import describe_grid
        from ppl.infer.schedule.plan import schedule_report
        from ppl.lang.schedule import parse_schedule
        dataset = self.bind(data, na=na) if data is not None else None
        analysis = self.analyze(dataset, methods, gaussian_block)
        report = analysis.to_json(self.checked, self.graph(dataset))
        if dataset is not None and analysis.gaussian:
            from ppl.infer.block import describe_blocks
            for entry, (block, text) in zip(report["gaussian_blocks"], describe_blocks(self.checked, dataset, analysis)):
                entry["variables"], entry["layout"] = list(block.members), text
        spec = parse_schedule(schedule) if schedule else None
        if dataset is not None:  # the schedule the run takes: with the defaults of its local block
            spec = _run_schedule(self.checked, dataset, analysis, spec)
        report["schedule"] = schedule_report(self.checked, analysis.scopes, spec, analysis.chains)
        grid_q = describe_grid(self.checked, grid)
        if grid_q is not None:
            report["grid"] = grid_q
        elif dataset is not None:  # what `infer` would refuse (E500) is refused here, at the statement
            from ppl.infer import build_problem
            build_problem(self.checked, dataset, analysis, spec)
        return {**report, "notes": list(dataset.notes)} if dataset is not None and dataset.notes else report

    def infer(self, data, *, seed=None, max_iter: int = 500, tol: float = 1e-6, set: dict | None = None,  # noqa: A002
              restarts: int = 1, methods: dict | None = None, time_limit: float | None = None,
              progress=None, record_terms: bool = False, schedule: str | None = None, na=None,
              stream: bool = False, mean_tol: float = 1e-5, accelerate: bool | str | None = None,
              gaussian_block: str | None = None, client=None, grid: str | None = None):
        """Fit q by message passing and return the `Posterior`.

        Parameters
        ----------
        data : str, pathlib.Path, pandas.DataFrame or dict of arrays
            The data; a path is read as CSV.
        seed : int, optional
            Seed of every random choice (initialisation, restarts, Monte Carlo).
        max_iter : int, default=500
            Sweeps at most.
        tol : float, default=1e-6
            Deterministic rules stop when the ELBO is estimated to be within `tol` nats of its
            fixed point (the last increase over a sweep, divided by one minus the rate at which
            increases shrink) and `mean_tol` holds too: absolute, in nats (not relative to
            |ELBO|, not per data point). Stochastic rules stop when the mean ELBO of the last 10
            sweeps differs from that of the 10 before by less than `tol` times |ELBO|.
        set : dict, optional
            Constants to override (as ``--set`` does).
        restarts : int, default=1
            Runs from different initialisations; the one with the best ELBO is kept.
        methods : dict, optional
            Rule per factor, as ``--method`` does (``{"y": "cvi"}``).
        time_limit : float, optional
            Seconds after which the run stops (reported as not converged).
        progress : callable, optional
            Called as ``progress(sweep, elbo)`` after every sweep.
        record_terms : bool, default=False
            Keep every factor's ELBO term after every sweep (``Posterior.term_trace``, the
            ELBO plot); costs one more ELBO evaluation per sweep.
        schedule : str, optional
            How steps visit the groups, overriding the model's `schedule` statement:
            ``"svi(batch=64)"`` for stochastic VI in minibatches of 64 groups
            (docs/rules/svi.md), ``"cvi(minibatch=64, step=0.5)"`` for doubly stochastic CVI
            (docs/rules/cvi.md); default batch VMP.
        stream : bool, default=False
            With a stochastic schedule and a data file: read the file once to index its groups,
            then read each step's groups only (memory bounded by the minibatch); the posterior
            then holds the global variables only.
        na : str or list of str, optional
            More cell texts that mean "missing" (pandas' defaults, ``NA``, ``nan``, ... always do).
        mean_tol : float, default=1e-5
            Deterministic rules also need every posterior mean to have moved by less than
            `mean_tol` posterior standard deviations in the last sweep.
        accelerate : bool or str, optional
            SQUAREM extrapolation of the natural parameters, kept only when the ELBO does not
            fall (laplace, delta: when the fixed-point residual does not grow, their objective
            not being a bound). Default: on for the deterministic rules (a Gaussian solved in data
            space, Woodbury, is extrapolated on its sites); True or ``"squarem"``: always;
            ``"anderson"``: Anderson acceleration with the same safeguards instead (fewer sweeps
            on some models, more on others: docs/rules/vmp.md#anderson; not on a Gaussian held in
            data space); False: off (and on a cluster).
        gaussian_block : str, optional
            ``"all"``: one joint Gaussian q over every Normal and MvNormal latent (mean field when
            the block would be too large); ``"none"``: mean field; ``"mu,a,b"``: those
            variables. Overrides the model's `block` statements (docs/language.md).
        client : distributed.Client, optional
            Run on this Dask cluster (``pip install "ppl[dask]"``, docs/scale.md): `data` is then
            a glob of CSV or Parquet files, a folder of Parquet files or a Dask DataFrame, each
            partition read and kept on a worker with its local variables; the posterior holds
            the global variables. A Dask DataFrame without `client` uses Dask's default client.
        grid : str, optional
            ``"tau"`` or ``"tau(nodes=21, sds=4)"``: q is a mixture over a grid of values of the
            scalar hyperparameter `tau`, one fit of the rest per node (docs/rules/grid.md);
            overrides the model's ``@grid`` annotation, ``"none"`` turns it off.
        """
        from ppl.infer import Options
        from ppl.infer.fitting import fit
        from ppl.infer.grid import infer_grid, requested
        from ppl.lang.schedule import parse_schedule
        model = self.with_constants(**set) if set else self
        if not model.checked.factors:
            raise ModelError("E814", f"{model.name} has no `~` statement: there is nothing to fit",
                             hint="draw the data and the parameters with `~`, e.g. `y ~ Normal(mu, 1)`")
        spec = parse_schedule(schedule) if schedule else model.checked.schedule
        options = Options(max_iter=max_iter, tol=tol, seed=seed, restarts=restarts, time_limit=time_limit,
                          record_terms=record_terms, mean_tol=mean_tol, accelerate=accelerate).validate()
        chosen = requested(model.checked, grid)
        if chosen is not None:
            return infer_grid(model, data, chosen, spec, options, na=na, methods=methods,
                              gaussian_block=gaussian_block, progress=progress, stream=stream, client=client)
        cluster = _cluster(model.checked, data, spec, na, client, stream)
        source = _stream(model.checked, data, spec, na) if stream else None
        try:
            if cluster is not None:
                dataset = cluster.take(np.arange(min(cluster.groups, getattr(spec, "batch", None) or CLIENT_GROUPS)))
            elif source is not None:
                dataset = source.take(np.arange(min(source.groups, spec.batch)))
            else:
                dataset = model.bind(data, na=na)
            analysis = model.analyze(dataset, methods, gaussian_block)
            return fit(model.checked, dataset, analysis, spec, options, progress, source, cluster)[0]
        finally:
            for opened in (source, cluster):
                if opened is not None:
                    opened.close()

    def __repr__(self) -> str:
        return f"Model({self.name!r}, factors={[f.name for f in self.checked.factors]})"


def _stream(model, data, spec, na):
    """The `GroupedSource` of a data file for a stochastic schedule (`stream=True`)."""
    from ppl.data.stream import GroupedSource
    from ppl.diagnostics import OptionError
    from ppl.graph import analyze
    from ppl.infer.schedule.plan import plan_for
    if spec is None or not spec.stochastic:
        raise OptionError("E335", "--stream reads the groups of a stochastic schedule: add one, e.g. "
                          "--schedule 'svi(batch=64)'")
    if not isinstance(data, (str, Path)):
        raise OptionError("E336", "--stream reads a CSV or Parquet file, not data in memory")
    latent = [n for n, v in model.variables.items() if v.kind == "latent"]
    analysis = analyze(model)
    plan = plan_for(model, analysis.scopes, latent, spec.span, analysis.chains)
    return GroupedSource.open(model, data, plan.group_column, na=na)


CLIENT_GROUPS = 100  # groups the client binds on a cluster run (the posterior's frame)


def _cluster(model, data, spec, na, client, stream: bool):
    """The `ClusterSource` of partitioned data (with `client`, or a Dask DataFrame and Dask's
    default client), or None for a run in this process."""
    from ppl.data.partitions import is_dask_frame, is_partitioned, partition_files
    from ppl.diagnostics import OptionError
    if client is None and is_dask_frame(data):
        from distributed import default_client
        try:
            client = default_client()
        except ValueError:
            raise OptionError("E363", "a Dask DataFrame is read on a cluster: pass client=distributed.Client(...)") from None
    if client is None:
        if is_partitioned(data):
            partition_files(data)  # E361 first when it names no file: a cluster would not help
            raise OptionError("E363", f"{data} names several files (or a folder): they are read on a cluster",
                              hint="add --workers N (a cluster on this machine) or --dask ADDRESS; from Python, "
                                   "client=distributed.Client(...)")
        return None
    if stream:
        raise OptionError("E364", "--stream and a cluster: the cluster holds the data in its partitions; drop --stream")
    if not (is_partitioned(data) or isinstance(data, (str, Path))):
        raise OptionError("E365", "a cluster reads CSV or Parquet files or a Dask DataFrame, not data in memory",
                          hint="run without a cluster, or pass dask.dataframe.from_pandas(frame, npartitions=...)")
    from ppl.cluster.source import ClusterSource
    from ppl.graph import analyze
    from ppl.infer.schedule.plan import plan_for
    latent = [n for n, v in model.variables.items() if v.kind == "latent"]
    analysis = analyze(model)
    plan = plan_for(model, analysis.scopes, latent, spec.span if spec else None, analysis.chains)
    return ClusterSource(client, model, data, plan.group_column, na)


def compile(text: str, name: str = "<string>", set: dict | None = None) -> Model:  # noqa: A001
    """Check model text and return a `Model`."""
    return Model(text, name, set)


def load(path, set: dict | None = None) -> Model:  # noqa: A002
    """Read and check a `.vim` file."""
    if not isinstance(path, (str, os.PathLike)):
        raise ModelError("E001", f"cannot read a model from {_a(type(path).__name__)}: give the path of a .vim "
                         "file or a ppl.Model")
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError("E001", f"cannot read model file {path}: byte {exc.object[exc.start]:#04x} at offset "
                         f"{exc.start} is not UTF-8", hint="save the model as UTF-8 text") from None
    except OSError as exc:
        raise ModelError("E001", f"cannot read model file {path}: {exc.strerror or exc}") from None
    return Model(text, str(path), set)


def _a(noun: str) -> str:
    """`noun` with its indefinite article (a type's name in a message)."""
    return f"{'an' if noun[0].lower() in 'aeiou' else 'a'} {noun}"


def _run_schedule(checked, dataset, analysis, spec):
    """The schedule a run on `dataset` takes (`ppl.infer.schedule.blocks.block_defaults`), or
    `spec` as given when the model cannot be built for a run (the run then says why)."""
    from ppl.infer.access import Unsupported
    from ppl.infer.build import build_problem
    try:
        return build_problem(checked, dataset, analysis, spec).schedule
    except Unsupported:
        return spec
