"""Inference on a Dask cluster (`pip install "ppl[dask]"`): the data's partitions stay on the
workers with their local variables; only the messages to the globals travel. Imported only
when a run is given a cluster (`--dask`, `--workers`, `Model.infer(client=...)`)."""
