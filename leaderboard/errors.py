"""The errors of bad audit input: `InputError` names the file, line, field and value;
`BadArgument` a value handed to a rule or a metric; `BrokenContract` a bug between the
project's own parts.

Line convention: `line` is the 1-based line of the offending row in the file
as a CSV with a header would show it, so the header is line 1 and the first
data row is line 2. Parquet files and uploaded tables use the same numbering
(data row r, counted from 0, is line r + 2). `line` is None when the problem
is not one row (a missing column, a missing row, an empty file).
"""

from __future__ import annotations

from expaudit.errors import InternalError, InvalidInput


class InputError(InvalidInput):
    """Bad input to the audit, with enough context to find and fix it.

    Attributes
    ----------
    source : file name (or "upload") the problem is in.
    line : 1-based line number (header = line 1), or None.
    field : column name (or a short description of what is wrong), or None.
    value : the offending value as text, or None.
    message : what is wrong, in words.
    """

    def __init__(
        self,
        source: str,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
        value: object = None,
    ) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.value = None if value is None else str(value)
        self.message = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.source
        if self.line is not None:
            where += f" line {self.line}"
        parts = [where]
        if self.field is not None:
            parts.append(f"field '{self.field}'")
        head = ", ".join(parts)
        if self.value is not None:
            return f"{head}: value '{self.value}' {self.message}"
        return f"{head}: {self.message}"

    def to_dict(self) -> dict:
        """JSON-ready form for API error bodies."""
        return {
            "source": self.source,
            "line": self.line,
            "field": self.field,
            "value": self.value,
            "message": str(self),
        }


class BrokenContract(InternalError, ValueError):
    """A value one part of the project handed another that breaks the callee's contract (a
    duplicate id from the service's own records, frozen data out of step): a bug, never the
    user's input."""


class BadArgument(InvalidInput, ValueError):
    """A value handed to a rule, a metric, the audit or the site builder that breaks its
    documented shape or range; the message names the argument or field."""
