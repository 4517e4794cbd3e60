"""Text → AST. Lark (LALR, strict, with positions) parses; a Transformer only builds nodes."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ppl.diagnostics import ModelError, Source, Span
from ppl.lang import ast
from ppl.lang.syntax_errors import explain


def grammar_text() -> str:
    """The grammar shipped in the wheel (``ppl/grammar/ppl.lark``), or the checkout's copy."""
    packaged = resources.files("ppl").joinpath("grammar", "ppl.lark")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "grammar" / "ppl.lark").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _lark() -> Lark:
    # cache=True keeps the LALR tables in a temporary file keyed by the grammar's hash, so a
    # fresh process skips their construction (~0.3 s of every `ppl` command's start-up).
    return Lark(grammar_text(), parser="lalr", strict=True, propagate_positions=True,
                maybe_placeholders=True, cache=True)


def parse(text: str, name: str = "<string>") -> ast.Program:
    """Parse model text into an `ast.Program`; a syntax error becomes a located `ModelError`."""
    source = Source(text, name)
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, source) from None
    _verify_depth(tree, source)
    return _Builder(source).transform(tree)


MAX_DEPTH = 150  # nesting of an expression; every later stage walks expressions recursively


def _verify_depth(tree: Tree, source: Source) -> None:
    """A located error for an expression nested past `MAX_DEPTH` (a sum of thousands of terms is
    a left-deep tree), found without recursion, before any recursive stage overflows the stack."""
    stack = [(item, item, 1) for item in tree.children if isinstance(item, Tree)]
    while stack:
        node, statement, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ModelError("E101", f"an expression is nested more than {MAX_DEPTH} levels deep",
                             span=_span(source, statement.meta),
                             hint="split a long sum or product into named `=` definitions, or use sum() "
                                  "over a vector")
        stack.extend((child, statement, depth + 1) for child in node.children if isinstance(child, Tree))


def _syntax_error(exc: UnexpectedInput, source: Source) -> ModelError:
    line = getattr(exc, "line", None)
    column = getattr(exc, "column", None)
    if isinstance(exc, UnexpectedEOF) or line is None or line < 1:
        lines = source.text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
    width = 1
    found = "end of file"
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        found = f"`{exc.token}`"
        width = max(1, len(str(exc.token)))
    elif isinstance(exc, UnexpectedCharacters):
        found = f"character `{source.text[exc.pos_in_stream]}`"
    span = Span(line, column, line, column + width, source)
    expected = _expected(exc)
    message, hint = explain(exc, _lark(), source.text)
    return ModelError("E100", message or f"unexpected {found}", span=span,
                      expected=expected, hint=hint)


_TERMINAL_NAMES = {
    "NAME": "a name", "INT": "an integer", "FLOAT": "a number", "STRING": "a quoted column name",
    "TYPE_NAME": "a type (real, int, bool, cat, weight)", "RANGE": "`..`", "TILDE": "`~`", "EQUAL": "`=`",
    "LPAR": "`(`", "RPAR": "`)`", "LSQB": "`[`", "RSQB": "`]`", "LBRACE": "`{`", "RBRACE": "`}`",
    "COMMA": "`,`", "COLON": "`:`", "SEMICOLON": "`;`", "PLUS": "`+`", "MINUS": "`-`",
    "STAR": "`*`", "SLASH": "`/`", "AT": "`@`", "CIRCUMFLEX": "`^`", "$END": "end of file",
    "CONST": "`const`", "DATA": "`data`", "SCHEDULE": "`schedule`", "BLOCK": "`block`", "FOR": "`for`", "IN": "`in`",
    "FROM": "`from`",
}


def _expected(exc: UnexpectedInput) -> str | None:
    names = getattr(exc, "accepts", None) or getattr(exc, "expected", None) or ()
    shown = sorted({_TERMINAL_NAMES.get(n, n) for n in names if not n.startswith("__")})
    if not shown:
        return None
    return ", ".join(shown[:8]) + (" ..." if len(shown) > 8 else "")


def _span(source: Source, meta) -> Span:
    return Span(meta.line, meta.column, meta.end_line, meta.end_column, source)


def _tok_span(source: Source, tok: Token) -> Span:
    return Span(tok.line, tok.column, tok.end_line, tok.end_column, source)


@v_args(meta=True, inline=True)
class _Builder(Transformer):
    """Builds `ast` nodes from the parse tree; no checking and no evaluation happen here."""

    def __init__(self, source: Source):
        super().__init__()
        self.source = source

    def _s(self, meta) -> Span:
        return _span(self.source, meta)

    # -- program and declarations
    def start(self, meta, *items):
        return ast.Program(tuple(i for i in items if not isinstance(i, Token)), self.source)

    def const_decl(self, meta, name, type_, value):
        return ast.ConstDecl(str(name), type_, value, self._s(meta), _tok_span(self.source, name))

    def data_decl(self, meta, name, type_, binding):
        return ast.DataDecl(str(name), type_, binding, self._s(meta), _tok_span(self.source, name))

    def schedule_decl(self, meta, name, *kwargs):
        return ast.Schedule(str(name), tuple(k for k in kwargs if k is not None), self._s(meta))

    def block_decl(self, meta, *names):
        return ast.GaussianBlock(tuple(str(n) for n in names), tuple(_tok_span(self.source, n) for n in names),
                                 self._s(meta))

    def type(self, meta, elem, levels, dims):
        return ast.TypeSpec(str(elem), levels, dims or (), self._s(meta))

    def levels(self, meta, dim):
        return dim

    def dims(self, meta, *dims):
        return tuple(dims)

    def dim_name(self, meta, tok):
        return str(tok)

    def dim_int(self, meta, tok):
        return int(tok)

    def column_name(self, meta, tok):
        return ast.Column(str(tok), self._s(meta))

    def column_string(self, meta, tok):
        return ast.Column(str(tok)[1:-1], self._s(meta))

    def bind_column(self, meta, column):
        return column

    def bind_group(self, meta, first, _range, last):
        return ast.ColumnGroup(first, last, self._s(meta))

    def bind_list(self, meta, *columns):
        return ast.ColumnList(tuple(columns), self._s(meta))

    # -- statements
    def sample(self, meta, target, type_, dist, *annotations):
        return ast.Sample(target, type_, dist, tuple(annotations), self._s(meta))

    def define(self, meta, target, value):
        return ast.Define(target, value, self._s(meta))

    def loop(self, meta, var, lo, _range, hi, *body):
        stmts = tuple(b for b in body if not isinstance(b, Token))
        return ast.Loop(str(var), lo, hi, stmts, self._s(meta), _tok_span(self.source, var))

    def annotation(self, meta, name, *kwargs):
        return ast.Annotation(str(name), tuple(k for k in kwargs if k is not None), self._s(meta))

    def kwarg(self, meta, name, value):
        return (str(name), value)

    def lvalue(self, meta, name, *indices):
        idx = tuple(i for i in indices if i is not None)
        return ast.LValue(str(name), idx, self._s(meta), _tok_span(self.source, name))

    # -- expressions
    def int_lit(self, meta, tok):
        return ast.Number(int(tok), True, self._s(meta))

    def real_lit(self, meta, tok):
        return ast.Number(float(tok), False, self._s(meta))

    def name(self, meta, tok):
        return ast.Name(str(tok), self._s(meta))

    def call(self, meta, name, *args):
        positional = tuple(a for a in args if a is not None and not isinstance(a, tuple))
        keywords = tuple(a for a in args if isinstance(a, tuple))
        return ast.Call(str(name), positional, keywords, self._s(meta), _tok_span(self.source, name))

    def vector(self, meta, *items):
        return ast.Vector(tuple(items), self._s(meta))

    def index(self, meta, base, *indices):
        return ast.Index(base, tuple(indices), self._s(meta))

    def neg(self, meta, operand):
        return ast.Neg(operand, self._s(meta))

    def add(self, meta, left, right):
        return ast.BinOp("+", left, right, self._s(meta))

    def sub(self, meta, left, right):
        return ast.BinOp("-", left, right, self._s(meta))

    def mul(self, meta, left, right):
        return ast.BinOp("*", left, right, self._s(meta))

    def div(self, meta, left, right):
        return ast.BinOp("/", left, right, self._s(meta))

    def matmul(self, meta, left, right):
        return ast.BinOp("@", left, right, self._s(meta))

    def pow(self, meta, left, right):
        return ast.BinOp("^", left, right, self._s(meta))
