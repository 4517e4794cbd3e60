"""The Dask client of `ppl infer --dask ADDRESS` or `--workers N`."""

from __future__ import annotations

import contextlib

from ppl.diagnostics import OptionError

CONNECT_TIMEOUT = "10s"  # to reach the scheduler of --dask


def local_cluster(workers: int):
    """A cluster of `workers` processes on this machine, one thread each. Work stealing is off:
    a partition's tasks must run where its locals are (a stolen task rebuilds them, which the
    run survives but which changes its trace)."""
    import logging

    import dask
    from distributed import LocalCluster
    with dask.config.set({"distributed.scheduler.work-stealing": False}):  # its own log: errors only
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                            silence_logs=logging.ERROR)


@contextlib.contextmanager
def connect(address: str | None, workers: int | None):
    """A client of the scheduler at `address`, or of a new local cluster of `workers`."""
    from distributed import Client
    if address is not None:
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as exc:
            raise OptionError("E367", f"--dask {address}: cannot reach a Dask scheduler there ({exc})",
                              hint="start one with `dask scheduler` and workers with `dask worker ADDRESS`, "
                                   "or use --workers N for a cluster on this machine") from None
        with client:
            yield client
        return
    cluster = local_cluster(workers)
    with cluster, Client(cluster) as client:
        yield client
