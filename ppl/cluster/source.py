"""The data of a cluster run: partitions read and bound on the Dask workers in one pass
(`ppl.data.partitions`), held there as futures, and the rounds of a run over them.

`ClusterSource` has `GroupedSource`'s interface (`groups`, `take`), so that the client binds
the few groups it needs (a start, the posterior's frame) the way a streamed run does; `round`
sends one task per partition and sums their `Reply`s in a tree of Dask tasks (FAN_IN at a
node), so that the client receives one reply whatever the number of partitions.
"""

from __future__ import annotations

import pickle
import uuid

import numpy as np
from distributed import wait

from ppl.cluster import worker
from ppl.data.partitions import (concat_groups, first_bad_row, is_dask_frame, merge, partition_files,
                                 read_partition, summarise)
from ppl.data.stream import GroupedSource
from ppl.diagnostics import DataError

FAN_IN = 8  # replies summed by one task of the reduction tree


class ClusterSource:
    """The partitions of `data` (a glob, a Parquet folder or a Dask DataFrame) on `client`'s
    cluster, bound to the levels of all of them; `group` is the group plate's `cat` column."""

    def __init__(self, client, model, data, group: str | None, na=None):
        self.client, self.model, self.group = client, model, group
        self.frame = is_dask_frame(data)
        if self.frame:
            pieces = client.compute(data.to_delayed())
            sources = ["Dask DataFrame"] * len(pieces)
            self.labels = [f"partition {i + 1} of the Dask DataFrame" for i in range(len(pieces))]
            self.name = "Dask DataFrame"
        else:
            pieces = sources = self.labels = partition_files(data)
            self.name = str(data)
        self.sources = sources
        raw = client.map(read_partition, [model] * len(pieces), pieces, sources, na=na, pure=False)
        self._summaries = client.map(summarise, raw, pure=False)
        self._raise_first(self._summaries)
        summaries = client.gather(self._summaries)
        try:
            self.layout = merge(model, summaries, self.labels, group, self.name)
        except DataError as error:
            raise self._located(error, raw) from None
        self.datasets = [client.submit(worker.bind_task, r, self.layout.only(i), i, model, group, pure=False)
                         for i, r in enumerate(raw)]
        self._raise_first(self.datasets)
        del self._summaries
        self.groups = sum(len(g) for g in self.layout.groups) if group is None else len(self.layout.levels[group])
        self.owner = np.full(self.groups, -1, dtype=np.int64)
        self.local = np.zeros(self.groups, dtype=np.int64)
        for i, own in enumerate(self.layout.groups):
            self.owner[own], self.local[own] = i, np.arange(len(own))
        self.parts, self.run, self.tick, self.seed, self.home = [], None, 0, 0, {}
        self.sent = self.received = 0  # bytes, counted when `measure` is on
        self.measure = False

    @property
    def partitions(self) -> int:
        return len(self.datasets)

    @property
    def where(self) -> str:
        return f"each step's groups fitted on the cluster, where their {self.partitions} partitions are"

    def stepper(self, problem, rng):
        """The SVI/SSMF steps of a run over these partitions."""
        from ppl.cluster.svi import ClusterSVI
        return ClusterSVI(problem, rng, self)

    def _raise_first(self, futures) -> None:
        """The error of the first partition (in order) that failed, its row counted from the
        first row of a DataFrame."""
        wait(futures)
        for i, future in enumerate(futures):
            if future.status == "error":
                error = future.exception()
                if isinstance(error, DataError) and self.frame and error.row is not None:
                    error.row += self._offset(i)
                raise error

    def _offset(self, index: int) -> int:
        """Rows of the partitions before `index` (all read without error)."""
        if hasattr(self, "layout"):
            return int(self.layout.offsets[index])
        return int(sum(s.rows for s in self.client.gather(self._summaries[:index])))

    def _located(self, error: DataError, raw) -> DataError:
        """A level error found on the labels of all partitions, at its row in the first partition
        that has it (`merge` checks the labels, not the rows)."""
        if error.column not in self.model.data or error.row is not None:
            return error
        found = self.client.gather(self.client.map(first_bad_row, [self.model] * len(raw), raw,
                                                   [error.column] * len(raw), self.sources, pure=False))
        for i, located in enumerate(found):
            if located is not None:
                if self.frame and located.row is not None:
                    located.row += self._offset(i)
                return located
        return error

    # ---- what the client binds

    def take(self, groups) -> object:
        """The `Dataset` of these groups (global indices, any order), as `GroupedSource.take`
        gives it: gathered from the partitions that hold them."""
        groups = np.asarray(groups, dtype=np.int64).reshape(-1)
        owners = self.owner[groups]
        involved = sorted(set(owners.tolist()))
        pieces = [self.client.submit(worker.take_task, self.datasets[p], self.model, self.group,
                                     self.local[groups[owners == p]], pure=False) for p in involved]
        datasets = self.client.gather(pieces)
        position = np.concatenate([np.flatnonzero(owners == p) for p in involved])
        order = np.empty(len(groups), dtype=np.int64)
        order[position] = np.arange(len(groups))
        whole = concat_groups(self.model, datasets, self.group)
        return GroupedSource.from_dataset(self.model, whole, self.group).take(order)

    # ---- a run's rounds

    def open_run(self, analysis, spec, seed: int) -> None:
        """Partitions ready for a run (with its analysis and schedule) and a fresh store of
        their locals on every worker (`PartitionStates`), present and future."""
        self.close_run()
        self.parts = [self.client.submit(worker.Partition, i, d, self.model, analysis, spec, self.group, pure=False)
                      for i, d in enumerate(self.datasets)]
        self.run, self.tick, self.seed = f"ppl-{uuid.uuid4().hex}", 0, seed
        self.home = {}  # partition -> worker address
        self.client.register_plugin(worker.PartitionStates(self.run), name=self.run)

    def round(self, task, *args, only: dict | None = None, **kwargs) -> worker.Reply:
        """One task per partition (`only`: {partition: first argument} for some of them), their
        replies summed on the cluster; the next tick."""
        chosen = range(len(self.parts)) if only is None else sorted(only)
        futures = []
        for i in chosen:
            extra = () if only is None else (only[i],)
            home = self.home.get(i)  # where its state is: Dask may run it elsewhere only if that worker is gone
            placed = {"workers": [home], "allow_other_workers": True} if home else {}
            futures.append(self.client.submit(task, self.parts[i], self.run, self.tick, self.seed, *extra, *args,
                                              pure=False, **placed, **kwargs))
            if self.measure:
                self.sent += len(pickle.dumps((extra, args, kwargs)))
        self.tick += 1
        while len(futures) > 1:
            futures = [self.client.submit(worker.combine, *futures[i:i + FAN_IN], pure=False)
                       for i in range(0, len(futures), FAN_IN)]
        reply = futures[0].result()
        self.home.update(reply.where)
        if self.measure:
            self.received += len(pickle.dumps(reply))
        return reply

    def close_run(self) -> None:
        if self.run is not None:
            self.client.unregister_worker_plugin(self.run)
            self.run, self.parts = None, []

    def close(self) -> None:
        """Release the partitions and every worker's states."""
        self.close_run()
        self.datasets = []
