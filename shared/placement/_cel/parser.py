"""A recursive-descent parser for the CEL grammar (cel-spec ``langdef``), with cel-go's
optional syntax (``a.?b``, ``a[?k]``, ``[?x]``, ``{?k: v}``) and macro expansion.

Limits follow cel-go's defaults: at most 100,000 code points of source and a nesting depth of
250; beyond either the expression is rejected at compile time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from fleetplace.shared.placement._cel import ast
from fleetplace.shared.placement._cel.values import INT64_MAX, UINT64_MAX, Uint

MAX_EXPRESSION_CODE_POINTS: Final = 100_000
MAX_RECURSION_DEPTH: Final = 250

RESERVED: Final = frozenset(
    {"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop"}
    | {"package", "namespace", "return", "var", "void", "while"}
)

_TOKEN = re.compile(
    r"""
    (?P<ws>[\t\n\f\r ]+|//[^\n]*)
  | (?P<float>(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+))
  | (?P<hex>0[xX][0-9a-fA-F]+[uU]?)
  | (?P<int>[0-9]+[uU]?)
  | (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:\"\"\"|'''|"|'))
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[<>!?:.,()\[\]{}+\-*/%])
    """,
    re.VERBOSE,
)

_SIMPLE_ESCAPES: Final = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
}


class ParseError(Exception):
    """A syntax error at a code-point offset."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "int", "uint", "float", "string", "bytes", "ident", "op", "eof"
    text: str
    pos: int
    value: object = None


def _decode_string(src: str, start: int, prefix_len: int, quote: str) -> tuple[str | bytes, int, bool]:
    """Decode a string or bytes literal starting at ``start``; returns (value, end, is_bytes)."""
    prefix = src[start : start + prefix_len].lower()
    raw, is_bytes = "r" in prefix, "b" in prefix
    i = start + prefix_len + len(quote)
    multiline = len(quote) == 3
    chars: list[str] = []
    out_bytes = bytearray()

    def emit_text(s: str) -> None:
        if is_bytes:
            out_bytes.extend(s.encode("utf-8"))
        else:
            chars.append(s)

    n = len(src)
    while True:
        if i >= n:
            raise ParseError("Syntax error: unterminated string literal", start)
        if src.startswith(quote, i):
            i += len(quote)
            break
        c = src[i]
        if not multiline and c in "\r\n":
            raise ParseError("Syntax error: newline in string literal", i)
        if c != "\\" or raw:
            emit_text(c)
            i += 1
            continue
        if i + 1 >= n:
            raise ParseError("Syntax error: unterminated string literal", start)
        e = src[i + 1]
        if e in _SIMPLE_ESCAPES:
            emit_text(_SIMPLE_ESCAPES[e])
            i += 2
        elif e in "xX":
            h = src[i + 2 : i + 4]
            if not re.fullmatch(r"[0-9a-fA-F]{2}", h):
                raise ParseError("Syntax error: invalid escape sequence", i)
            if is_bytes:
                out_bytes.append(int(h, 16))
            else:
                emit_text(chr(int(h, 16)))
            i += 4
        elif e in "uU":
            width = 4 if e == "u" else 8
            h = src[i + 2 : i + 2 + width]
            if is_bytes or not re.fullmatch(rf"[0-9a-fA-F]{{{width}}}", h):
                raise ParseError("Syntax error: invalid escape sequence", i)
            cp = int(h, 16)
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise ParseError("Syntax error: invalid unicode code point", i)
            emit_text(chr(cp))
            i += 2 + width
        elif e in "0123":
            o = src[i + 1 : i + 4]
            if not re.fullmatch(r"[0-3][0-7]{2}", o):
                raise ParseError("Syntax error: invalid escape sequence", i)
            if is_bytes:
                out_bytes.append(int(o, 8))
            else:
                emit_text(chr(int(o, 8)))
            i += 4
        else:
            raise ParseError("Syntax error: invalid escape sequence", i)
    return (bytes(out_bytes) if is_bytes else "".join(chars)), i, is_bytes


def tokenize(src: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(src)
    while i < n:
        m = _TOKEN.match(src, i)
        if m is None:
            raise ParseError(f"Syntax error: token recognition error at: '{src[i]}'", i)
        kind = m.lastgroup
        text = m.group()
        if kind == "ws":
            i = m.end()
            continue
        if kind == "string":
            quote = text.lstrip("rRbB")
            value, end, is_bytes = _decode_string(src, i, len(text) - len(quote), quote)
            tokens.append(Token("bytes" if is_bytes else "string", src[i:end], i, value))
            i = end
            continue
        if kind in ("int", "hex"):
            unsigned = text[-1] in "uU"
            digits = text[:-1] if unsigned else text
            value_int = int(digits, 16) if kind == "hex" else int(digits)
            if unsigned:
                if value_int > UINT64_MAX:
                    raise ParseError(f"invalid uint literal: {text}", i)
                tokens.append(Token("uint", text, i, Uint(value_int)))
            else:
                # range is checked by the parser, which knows whether a '-' precedes it
                tokens.append(Token("int", text, i, value_int))
        elif kind == "float":
            tokens.append(Token("float", text, i, float(text)))
        elif kind == "ident":
            tokens.append(Token("ident", text, i))
        else:
            tokens.append(Token("op", text, i))
        i = m.end()
    tokens.append(Token("eof", "<EOF>", n))
    return tokens


# the token set cel-go's ANTLR parser lists when an operand is missing
_PRIMARY_START: Final = "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"
_RELATIONS: Final = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_"}
_ADDITIVE: Final = {"+": "_+_", "-": "_-_"}
_MULTIPLICATIVE: Final = {"*": "_*_", "/": "_/_", "%": "_%_"}
_MACROS: Final = {
    ("all", 2),
    ("exists", 2),
    ("exists_one", 2),
    ("map", 2),
    ("map", 3),
    ("filter", 2),
    ("optMap", 2),
    ("optFlatMap", 2),
}


class Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.tokens = tokenize(src)
        self.i = 0
        self.depth = 0

    # -- token helpers -------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def at_op(self, text: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind == "op" and tok.text == text

    def expect_op(self, text: str) -> Token:
        tok = self.next()
        if tok.kind != "op" or tok.text != text:
            raise ParseError(f"Syntax error: mismatched input '{tok.text}' expecting '{text}'", tok.pos)
        return tok

    def enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_RECURSION_DEPTH:
            raise ParseError(f"expression recursion limit exceeded: {MAX_RECURSION_DEPTH}", pos)

    # -- grammar -------------------------------------------------------------------------
    def parse(self) -> ast.Node:
        expr = self.expr()
        tok = self.peek()
        if tok.kind != "eof":
            raise ParseError(f"Syntax error: extraneous input '{tok.text}' expecting <EOF>", tok.pos)
        return expr

    def expr(self) -> ast.Node:
        self.enter(self.peek().pos)
        cond = self.conditional_or()
        if self.at_op("?"):
            q = self.next()
            then = self.conditional_or()
            self.expect_op(":")
            other = self.expr()
            cond = ast.Call(q.pos, "_?_:_", (cond, then, other))
        self.depth -= 1
        return cond

    def conditional_or(self) -> ast.Node:
        left = self.conditional_and()
        while self.at_op("||"):
            op = self.next()
            left = ast.Call(op.pos, "_||_", (left, self.conditional_and()))
        return left

    def conditional_and(self) -> ast.Node:
        left = self.relation()
        while self.at_op("&&"):
            op = self.next()
            left = ast.Call(op.pos, "_&&_", (left, self.relation()))
        return left

    def relation(self) -> ast.Node:
        left = self.addition()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text in _RELATIONS:
                self.next()
                left = ast.Call(tok.pos, _RELATIONS[tok.text], (left, self.addition()))
            elif tok.kind == "ident" and tok.text == "in":
                self.next()
                left = ast.Call(tok.pos, "@in", (left, self.addition()))
            else:
                return left

    def addition(self) -> ast.Node:
        left = self.multiplication()
        while self.peek().kind == "op" and self.peek().text in _ADDITIVE:
            op = self.next()
            left = ast.Call(op.pos, _ADDITIVE[op.text], (left, self.multiplication()))
        return left

    def multiplication(self) -> ast.Node:
        left = self.unary()
        while self.peek().kind == "op" and self.peek().text in _MULTIPLICATIVE:
            op = self.next()
            left = ast.Call(op.pos, _MULTIPLICATIVE[op.text], (left, self.unary()))
        return left

    def unary(self) -> ast.Node:
        tok = self.peek()
        if tok.kind == "op" and tok.text == "!":
            self.next()
            self.enter(tok.pos)
            operand = self.unary()
            self.depth -= 1
            return ast.Call(tok.pos, "!_", (operand,))
        if tok.kind == "op" and tok.text == "-":
            nxt = self.peek(1)
            if nxt.kind in ("int", "float") and not self._member_follows(2):
                # fold negative literals so that -9223372036854775808 is representable
                self.next()
                self.next()
                if nxt.kind == "int":
                    assert isinstance(nxt.value, int)
                    if nxt.value > INT64_MAX + 1:
                        raise ParseError(f"invalid int literal: -{nxt.text}", tok.pos)
                    return self.member_suffix(ast.Literal(tok.pos, -nxt.value))
                assert isinstance(nxt.value, float)
                return self.member_suffix(ast.Literal(tok.pos, -nxt.value))
            self.next()
            self.enter(tok.pos)
            operand = self.unary()
            self.depth -= 1
            return ast.Call(tok.pos, "-_", (operand,))
        return self.member()

    def _member_follows(self, ahead: int) -> bool:
        t = self.peek(ahead)
        return t.kind == "op" and t.text in (".", "[")

    def member(self) -> ast.Node:
        return self.member_suffix(self.primary())

    def member_suffix(self, node: ast.Node) -> ast.Node:
        while True:
            tok = self.peek()
            if tok.kind != "op":
                return node
            if tok.text == ".":
                self.next()
                optional = False
                if self.at_op("?"):
                    self.next()
                    optional = True
                name_tok = self.next()
                if name_tok.kind != "ident":
                    raise ParseError(
                        f"Syntax error: mismatched input '{name_tok.text}' expecting IDENTIFIER",
                        name_tok.pos,
                    )
                # reserved words are rejected only where an identifier starts an expression:
                # they are fine as field names (``m.if``) and receiver-call names (``x.while()``)
                if not optional and self.at_op("("):
                    open_paren = self.next()
                    args = self.expr_list(")")
                    node = self.member_call(node, name_tok, args, open_paren.pos)
                else:
                    node = ast.Select(name_tok.pos, node, name_tok.text, optional)
            elif tok.text == "[":
                self.next()
                optional = False
                if self.at_op("?"):
                    self.next()
                    optional = True
                index = self.expr()
                self.expect_op("]")
                node = ast.Index(tok.pos, node, index, optional)
            elif tok.text == "{" and self._is_type_name(node):
                self.next()
                self._skip_fields()
                node = ast.StructLit(tok.pos, self._qualified(node))
            else:
                return node

    @staticmethod
    def _is_type_name(node: ast.Node) -> bool:
        while isinstance(node, ast.Select) and not node.optional:
            node = node.operand
        return isinstance(node, ast.Ident)

    @staticmethod
    def _qualified(node: ast.Node) -> str:
        parts: list[str] = []
        while isinstance(node, ast.Select):
            parts.append(node.field)
            node = node.operand
        assert isinstance(node, ast.Ident)
        parts.append(node.name)
        return ".".join(reversed(parts))

    def _skip_fields(self) -> None:
        while not self.at_op("}"):
            if self.at_op("?"):
                self.next()
            name = self.next()
            if name.kind != "ident":
                raise ParseError(
                    f"Syntax error: mismatched input '{name.text}' expecting IDENTIFIER", name.pos
                )
            self.expect_op(":")
            self.expr()
            if not self.at_op(","):
                break
            self.next()
        self.expect_op("}")

    def _check_reserved(self, tok: Token) -> None:
        if tok.text in RESERVED:
            raise ParseError(f"reserved identifier: {tok.text}", tok.pos)

    def expr_list(self, close: str) -> list[ast.Node]:
        args: list[ast.Node] = []
        if self.at_op(close):
            self.next()
            return args
        while True:
            args.append(self.expr())
            if self.at_op(","):
                self.next()
                if self.at_op(close):  # trailing comma
                    self.next()
                    return args
                continue
            self.expect_op(close)
            return args

    def primary(self) -> ast.Node:
        tok = self.next()
        if tok.kind == "int":
            assert isinstance(tok.value, int)
            if tok.value > INT64_MAX:
                raise ParseError(f"invalid int literal: {tok.text}", tok.pos)
            return ast.Literal(tok.pos, tok.value)
        if tok.kind in ("uint", "float", "string", "bytes"):
            return ast.Literal(tok.pos, tok.value)
        if tok.kind == "ident":
            if tok.text == "true":
                return ast.Literal(tok.pos, True)
            if tok.text == "false":
                return ast.Literal(tok.pos, False)
            if tok.text == "null":
                return ast.Literal(tok.pos, None)
            if tok.text == "in":
                raise ParseError("Syntax error: mismatched input 'in'", tok.pos)
            self._check_reserved(tok)
            if self.at_op("("):
                open_paren = self.next()
                args = self.expr_list(")")
                return self.global_call(tok, args, open_paren.pos)
            return ast.Ident(tok.pos, tok.text)
        if tok.kind == "op":
            if tok.text == "." and self.peek().kind == "ident":
                # leading-dot (root-scoped) identifier
                name = self.next()
                self._check_reserved(name)
                if self.at_op("("):
                    open_paren = self.next()
                    return self.global_call(name, self.expr_list(")"), open_paren.pos)
                return ast.Ident(name.pos, name.text)
            if tok.text == "(":
                inner = self.expr()
                self.expect_op(")")
                return inner
            if tok.text == "[":
                return self.list_literal(tok)
            if tok.text == "{":
                return self.map_literal(tok)
        raise ParseError(f"Syntax error: mismatched input '{tok.text}' expecting {_PRIMARY_START}", tok.pos)

    def list_literal(self, open_tok: Token) -> ast.Node:
        elements: list[ast.Node] = []
        optional: set[int] = set()
        while not self.at_op("]"):
            if self.at_op("?"):
                self.next()
                optional.add(len(elements))
            elements.append(self.expr())
            if not self.at_op(","):
                break
            self.next()
        self.expect_op("]")
        return ast.ListLit(open_tok.pos, tuple(elements), frozenset(optional))

    def map_literal(self, open_tok: Token) -> ast.Node:
        entries: list[ast.MapEntry] = []
        while not self.at_op("}"):
            optional = False
            if self.at_op("?"):
                self.next()
                optional = True
            key = self.expr()
            self.expect_op(":")
            value = self.expr()
            entries.append(ast.MapEntry(key, value, optional))
            if not self.at_op(","):
                break
            self.next()
        self.expect_op("}")
        return ast.MapLit(open_tok.pos, tuple(entries))

    # -- calls and macros (located at the open parenthesis, as cel-go reports them) ---------
    def global_call(self, name: Token, args: list[ast.Node], pos: int) -> ast.Node:
        if name.text == "has" and len(args) == 1:
            arg = args[0]
            if not isinstance(arg, ast.Select) or arg.optional:
                raise ParseError("invalid argument to has() macro", pos)
            return ast.Has(pos, arg.operand, arg.field)
        return ast.Call(pos, name.text, tuple(args))

    def member_call(self, target: ast.Node, name: Token, args: list[ast.Node], pos: int) -> ast.Node:
        if (name.text, len(args)) in _MACROS:
            var = args[0]
            if not isinstance(var, ast.Ident):
                raise ParseError("argument must be a simple name", var.pos)
            if name.text == "map" and len(args) == 3:
                return ast.Comprehension(pos, "map", target, var.name, args[2], args[1])
            return ast.Comprehension(pos, name.text, target, var.name, args[1])
        return ast.Call(pos, name.text, tuple(args), target)


def parse(src: str) -> ast.Node:
    """Parse CEL source into an AST; raises :class:`ParseError`."""
    size = len(src)
    if size > MAX_EXPRESSION_CODE_POINTS:
        raise ParseError(
            f"expression code point size exceeds limit: size: {size}, limit {MAX_EXPRESSION_CODE_POINTS}", 0
        )
    return Parser(src).parse()
