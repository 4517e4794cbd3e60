"""Presenting results: text tables for the terminal, JSON and CSV for files."""

from ppl.report.tables import check_report, format_table

__all__ = ["check_report", "format_table"]
