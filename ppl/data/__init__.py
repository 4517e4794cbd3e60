"""Data binding: CSV paths, DataFrames or dicts of arrays → checked numpy arrays for a model."""

from ppl.data.binding import Dataset, bind
from ppl.data.stream import GroupedSource
from ppl.data.table import read_table

__all__ = ["Dataset", "GroupedSource", "bind", "read_table"]
