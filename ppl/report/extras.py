"""Optional libraries (extras of the ppl package), imported where used with a clear error."""

from __future__ import annotations

import importlib

from ppl.diagnostics import OptionError


def optional(module: str, extra: str):
    """Import `module`, or say which extra installs it (`pip install "ppl[extra]"`)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise OptionError("E346", f"this needs the Python package `{module.split('.')[0]}`, not installed",
                          hint=f'pip install "ppl[{extra}]"') from None
