"""Syntax error messages by example (Lark's `match_examples`).

Each entry maps a message and a hint to snippets that fail in the same parser state. Parser
states move when the grammar changes, so every snippet has a test (tests/test_syntax_errors.py).
"""

from __future__ import annotations

from lark.exceptions import UnexpectedCharacters, UnexpectedInput

# (message, hint) -> bad snippets that fail the same way
EXAMPLES: dict[tuple[str, str], list[str]] = {
    ("annotation before the statement",
     "rule annotations follow the distribution: `y ~ Bernoulli(p) @cvi`"): [
        "@cvi y ~ Normal(0, 1)",
        "for n in 1..N { @ncvmp y[n] ~ Normal(0, 1) }",
    ],
    ("loop body must be in braces", "write `for n in 1..N { ... }`"): [
        "for n in 1..N y[n] ~ Normal(0, 1)",
    ],
    ("a loop is missing its closing `}`", "close every `{` with `}`"): [
        "for n in 1..N { y[n] ~ Normal(0, 1)",
        "for n in 1..N {",
    ],
    ("loop range needs `..`", "write the range as `1..N`"): [
        "for n in 1:N { }",
        "for n in 1, N { }",
    ],
    ("missing `in` in a loop", "write `for n in 1..N { ... }`"): [
        "for n 1..N { }",
    ],
    ("data declaration needs a type", "write `data y: real[N]` (types: real, int, bool, cat, weight)"): [
        "data y real[N]",
        "data y",
        "data y: [N]",
    ],
    ("missing `,` between arguments", "separate arguments with `,`"): [
        "y ~ Normal(0 1)",
        "y ~ Normal(mu tau)",
    ],
    ("a statement must be `x ~ Dist(...)`, `x = expr`, `for`, `const` or `data`",
     "draw a variable with `~` and define one with `=`"): [
        "y Normal(0, 1)",
        "y",
        "y[n]",
    ],
    ("`**` is not an operator: a power is written `^`", "write `x ^ 2`"): [
        "y ~ Normal(m * x ** 2, 1)",
        "z = x ** 2",
    ],
    ("the right of `~` must be a distribution call", "write `x ~ Normal(0, 1)`"): [
        "y ~ mu",
        "y ~ 1",
        "y ~ (mu)",
    ],
}

_CHARACTER_HINTS = {
    "<": ("`<-` is not an operator here", "use `=` for a deterministic definition and `~` to draw"),
    "{": ("unexpected `{`", "a block only follows `for n in lo..hi`"),
    "'": ("column names are quoted with double quotes", 'write `from "my column"`'),
    "!": ("unexpected `!`", None),
}


def explain(exc: UnexpectedInput, parser, text: str) -> tuple[str | None, str | None]:
    """A (message, hint) for a syntax error, or (None, None) when no example matches."""
    if isinstance(exc, UnexpectedCharacters):
        char = text[exc.pos_in_stream]
        return _CHARACTER_HINTS.get(char, (f"unexpected character `{char}`", None))
    return _match(exc, parser)


def _state(exc: UnexpectedInput):
    """The LALR state an error happened in (Lark gives an int or a `ParserState`)."""
    state = getattr(exc, "state", None)
    return getattr(state, "position", state)


def _match(exc: UnexpectedInput, parser) -> tuple[str | None, str | None]:
    """The first example failing in the same parser state with the same acceptable tokens.

    Lark's own `match_examples` does this too, but 1.3.1 formats a `ParserState` with `%d` in
    a debug message and raises TypeError whenever two states match with different accepts.
    """
    state, accepts = _state(exc), getattr(exc, "accepts", None)
    token = getattr(getattr(exc, "token", None), "type", None)
    fallback = None
    for label, snippets in EXAMPLES.items():
        for snippet in snippets:
            try:
                parser.parse(snippet)
            except UnexpectedInput as other:
                if _state(other) != state or getattr(other, "accepts", None) != accepts:
                    continue
                if getattr(getattr(other, "token", None), "type", None) == token:
                    return label
                fallback = fallback or label
    return fallback or (None, None)
