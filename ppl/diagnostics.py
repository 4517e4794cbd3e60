"""User-facing errors: where they are (`Span`), what they say (`PplError`), how they print.

Every stage raises a `PplError` subclass for a user mistake. The error carries a stable code,
a one-line message, what was expected, a hint, and either a source span (model errors) or a
data location (column and row). Rendering lives here, in one place, so the CLI and the Python
API print the same thing: stanc3's layout of ``file:line:col``, the source line and a caret.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class Source:
    """A model text and the name it is reported under (a path, or ``<string>``)."""

    text: str
    name: str = "<string>"

    def line(self, number: int) -> str:
        lines = self.text.splitlines()
        return lines[number - 1] if 1 <= number <= len(lines) else ""


@dataclass(frozen=True)
class Span:
    """A 1-based region of a model text; `end_column` is one past the last character."""

    line: int
    column: int
    end_line: int
    end_column: int
    source: Source = field(compare=False, repr=False)

    def through(self, other: Span) -> Span:
        """The span from the start of this one to the end of `other`."""
        return Span(self.line, self.column, other.end_line, other.end_column, self.source)


class PplError(Exception):
    """A mistake in a model, its data or its options: reported, never a traceback.

    Parameters
    ----------
    code : str
        Stable identifier such as ``"E201"``; tests and docs refer to it.
    message : str
        What is wrong, in one line.
    span : Span, optional
        Where in the model text.
    expected : str, optional
        What would have been accepted.
    hint : str, optional
        How to fix it.
    """

    kind = "error"

    def __init__(self, code: str, message: str, *, span: Span | None = None,
                 expected: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.span = span
        self.expected = expected
        self.hint = hint

    def location(self) -> str:
        if self.span is None:
            return ""
        return f"{self.span.source.name}:{self.span.line}:{self.span.column}"

    def __reduce__(self):
        """Pickled with its fields (a Dask worker's error travels to the client as a pickle)."""
        return _rebuild, (type(self), self.__dict__)

    def __str__(self) -> str:
        return render(self)


class ModelError(PplError):
    """The model text is wrong: syntax, names, shapes, types, support, cycles, annotations."""

    kind = "model error"


class DataError(PplError):
    """The data do not fit the model: missing column, wrong type, value outside the support."""

    kind = "data error"

    def __init__(self, code: str, message: str, *, column: str | None = None,
                 row: int | None = None, source: str | None = None, **kw):
        super().__init__(code, message, **kw)
        self.column = column
        self.row = row
        self.source_name = source

    def location(self) -> str:
        parts = [self.source_name or "data"]
        if self.column is not None:
            parts.append(f"column '{self.column}'")
        if self.row is not None:
            parts.append(f"row {self.row}")
        return ", ".join(parts)


class OptionError(PplError):
    """An option given to the CLI or the API is invalid (`--set`, `--method`, `max_iter`, ...)."""

    kind = "option error"


def _rebuild(kind, fields: dict) -> PplError:
    error = kind.__new__(kind)
    Exception.__init__(error, fields.get("message"))
    error.__dict__.update(fields)
    return error


def nearest(name: str, candidates) -> str | None:
    """The candidate closest to `name`, if one is close enough to be a likely typo."""
    found = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def render(error: PplError) -> str:
    """Format an error: location and message first, then the source line with a caret."""
    where = error.location()
    head = f"{where}: " if where else ""
    lines = [f"{head}{error.kind} [{error.code}]: {error.message}"]
    if error.span is not None:
        lines.extend(_excerpt(error.span))
    if error.expected:
        lines.append(f"  expected: {error.expected}")
    if error.hint:
        lines.append(f"  hint: {error.hint}")
    return "\n".join(lines)


def _excerpt(span: Span) -> list[str]:
    text = span.source.line(span.line)
    if not text:
        return []
    gutter = f"{span.line:>4} | "
    width = span.end_column - span.column if span.end_line == span.line else len(text) - span.column + 1
    # Copy tabs from the source so the caret lines up under the offending token.
    pad = "".join(c if c == "\t" else " " for c in text[: span.column - 1])
    return [gutter + text, " " * (len(gutter) - 2) + "| " + pad + "^" * max(1, width)]
