"""Presenting results: text tables for the terminal, JSON and CSV for files."""

from ppl.report.outputs import write_atomic, write_draws, write_posterior
from ppl.report.summary import infer_report
from ppl.report.tables import check_report, format_table

__all__ = ["check_report", "format_table", "infer_report", "write_atomic", "write_posterior", "write_draws"]
