"""A command line read as bash reads it, with a real grammar (tree-sitter-bash): the simple commands
it runs, for the rules to match (:class:`~agy_harness.ports.policy.CommandParser`).

What is followed: lists and pipes (``;``, ``&&``, ``||``, ``|``, ``&``, newlines), groups ``( )`` and
``{ }``, ``!``, quote removal (``'…'``, ``"…"``, ``\\x``, ``r""m`` is ``rm``), redirections, command
substitutions (``$(…)``, backticks: their commands are commands of the line, wherever they stand), and the
wrappers whose command is another command (:mod:`.wrappers`: ``bash|sh|zsh|dash|ksh -c``, ``eval``,
``env``, ``timeout``, ``nice``, ``xargs``... each read by its real options, :mod:`.wrapper_options`;
runners such as ``sudo``, ``ssh``, ``script`` or ``unshare`` are never allowed through, and a deny sees
what they may run).

Everything else is *not understood* (the rules then ask): a line that does not parse, here-docs and
here-strings, process substitution, functions, loops and conditionals, a command name that is expanded
(``$X``, ``${IFS}``, a glob, a brace, ``$'…'``), a wrapper option we do not know or one that rewrites
the command's words (``xargs -I``, ``env -S``, ``find -exec``), a runner, control or invisible
characters, a non-ASCII command name (a look-alike). The commands inside such constructs are still
listed, so a ``deny`` still sees them.
"""

from __future__ import annotations

import re
from contextvars import ContextVar

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from agy_harness.ports.policy import ParsedCommand, Redirect, SimpleCommand

from .wrappers import MAX_CHARS, MAX_COMMANDS, MAX_DEPTH, MAX_READS, Reading, Unwrap, Word

MAX_TEXT = 64 * 1024  # a longer command line is not read (asked)

_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f\xad\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_JOINED = re.compile(r"(?<=\S)\\\n(?=\S)")
_GLOB = re.compile(r"[*?\[]|\{[^{}]*(,|\.\.)[^{}]*\}")  # a glob, or a brace that expands
_CONTAINERS = frozenset({"program", "list", "pipeline", "subshell", "compound_statement", "negated_command"})
#: tree-sitter-bash 0.25.1 crashes the process (a segmentation fault in its scanner) on some characters
#: of the high planes after a brace (`{` then U+D0000, U+E0100, U+10FFFD...; found by
#: tests/contracts/test_policy.py): the grammar is given every non-ASCII byte as the letter `a` (what
#: it is to bash: a word's character; the byte offsets stay those of the line), and every word's text
#: is read from the line itself (:data:`_SOURCE`)
_ASCII = bytes(range(128)) + b"a" * 128
_SOURCE: ContextVar[bytes] = ContextVar("agy_harness_policy_source")


class TreeSitterParser:
    """:class:`~agy_harness.ports.policy.CommandParser` over tree-sitter-bash (one parser, reused)."""

    def __init__(self) -> None:
        self._parser = Parser(Language(tree_sitter_bash.language()))

    def parse(self, text: str) -> ParsedCommand:
        reading = Reading()
        if len(text) > MAX_TEXT:
            return ParsedCommand(text=text[:200], understood=False, reason="the command line is too long")
        try:
            self._read(text, reading, (), 0)
        except RecursionError:
            reading.fail("it nests too deep to be read")
        except Exception as exc:  # a parser must never raise: what it cannot read is asked
            reading.fail(f"it could not be read ({type(exc).__name__})")
        if not reading.commands and not reading.reasons:
            reading.fail("there is no command")
        return ParsedCommand(
            text=text,
            commands=tuple(reading.commands),
            understood=not reading.reasons,
            reason=reading.reasons[0] if reading.reasons else "",
        )

    # -- a script ---------------------------------------------------------------------------

    def _read(self, text: str, reading: Reading, via: tuple[str, ...], depth: int) -> None:
        if depth > MAX_DEPTH:
            reading.fail("wrappers nest too deep")
            return
        reading.reads += 1
        reading.chars += len(text)
        if reading.reads > MAX_READS or reading.chars > MAX_CHARS:
            reading.fail("it holds too many scripts to read")
            return
        if _INVISIBLE.search(text):
            reading.fail("it holds control or invisible characters")
        if _JOINED.search(text):  # `r\<newline>m` is `rm` to bash; the grammar splits it: read both
            reading.fail("a line continuation joins a word")
            self._read(_JOINED.sub("", text), reading, via, depth + 1)
        source = text.encode("utf-8", "surrogateescape")
        tree = self._parser.parse(source.translate(_ASCII))
        if tree.root_node.has_error:
            reading.fail("it does not parse as a shell command")
        token = _SOURCE.set(source)
        try:
            _Walker(self, reading, via, depth).statement(tree.root_node, ())
        finally:
            _SOURCE.reset(token)


class _Walker:
    def __init__(self, parser: TreeSitterParser, reading: Reading, via: tuple[str, ...], depth: int) -> None:
        self.parser, self.reading, self.via, self.depth = parser, reading, via, depth

    def fail(self, reason: str) -> None:
        self.reading.fail(reason)

    def script(self, text: str, via: tuple[str, ...]) -> None:
        self.parser._read(text, self.reading, via, self.depth + 1)

    # -- statements -------------------------------------------------------------------------

    def statement(self, node: Node, redirects: tuple[Redirect, ...]) -> None:
        kind = node.type
        if kind == "comment":
            return
        if node.is_missing or kind == "ERROR":
            self.fail("it does not parse as a shell command")
        elif kind in _CONTAINERS:
            for child in node.named_children:
                self.statement(child, redirects)
        elif kind == "redirected_statement":
            own = tuple(self.redirect(r) for r in node.children_by_field_name("redirect"))
            body = node.child_by_field_name("body")
            if body is None:
                self.add(SimpleCommand(argv=(), redirects=redirects + own, via=self.via))
            else:
                self.statement(body, redirects + own)
        elif kind == "command":
            self.command(node, redirects)
        elif kind in ("variable_assignment", "variable_assignments"):
            pairs = [node] if kind == "variable_assignment" else node.named_children
            self.add(
                SimpleCommand(argv=(), assignments=tuple(self.assignment(a) for a in pairs), via=self.via)
            )
        elif kind == "command_substitution":
            self.substitution(node)
        else:
            self.fail(f"the shell construct {kind.replace('_', ' ')} is not followed")
            for child in node.named_children:  # its commands are still seen (a deny holds)
                self.statement(child, ())

    def add(self, command: SimpleCommand) -> None:
        if len(self.reading.commands) >= MAX_COMMANDS:
            self.fail("it holds too many commands to read")
            return
        self.reading.commands.append(command)

    def assignment(self, node: Node) -> str:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        text = _text(name) if name is not None else ""
        if value is not None:
            text += "=" + self.word(value).text
        else:
            text += "="
        return text

    def redirect(self, node: Node) -> Redirect:
        if node.type != "file_redirect":
            self.fail(f"{node.type.replace('_', ' ')} (here-document or here-string) is not followed")
            for child in node.named_children:
                self.scan(child)
            return Redirect(op=node.type, target="", dynamic=True)
        op, fd = "", ""
        target = Word("", False)
        for child in node.children:
            if child.type == "file_descriptor":
                fd = _text(child)
            elif not child.is_named:
                op += _text(child)
            else:
                target = self.word(child)
        return Redirect(op=fd + op, target=target.text, dynamic=target.dynamic)

    # -- a simple command ---------------------------------------------------------------------

    def command(self, node: Node, redirects: tuple[Redirect, ...]) -> None:
        words: list[Word] = []
        assignments: list[str] = []
        own = list(redirects)
        for child in node.named_children:
            if child.type == "variable_assignment":
                assignments.append(self.assignment(child))
            elif child.type == "command_name":
                inner = child.named_children
                words.append(self.word(inner[0]) if inner else Word(_text(child), True))
            elif child.type.endswith("_redirect"):
                own.append(self.redirect(child))
            elif child.type == "comment":
                continue
            else:
                words.append(self.word(child))
        if not words:
            self.add(
                SimpleCommand(argv=(), assignments=tuple(assignments), redirects=tuple(own), via=self.via)
            )
            return
        if words[0].dynamic:
            self.fail(f"the command name {words[0].text!r} is expanded when it runs")
        elif not words[0].text.isascii():
            self.fail(f"the command name {words[0].text!r} is not plain ASCII (a look-alike?)")
        Unwrap(self, tuple(own), tuple(assignments)).run(words, self.via)

    # -- words ----------------------------------------------------------------------------------

    def word(self, node: Node) -> Word:
        if _hidden(node):
            self.fail("a substitution the grammar does not show (a backtick inside ${…}?) is not followed")
            self.reread(_text(node))  # what it may run, for a deny to see
            return Word(_text(node), True)
        kind = node.type
        if kind == "word":
            raw = _text(node)
            return Word(_unescape(raw), bool(_GLOB.search(_unquoted_specials(raw))) or raw.startswith("~"))
        if kind == "number":
            return Word(_text(node), False)
        if kind == "raw_string":
            return Word(_text(node)[1:-1], False)
        if kind == "string":
            if any(c.type != "string_content" for c in node.named_children):
                self.scan(node)
                return Word(_text(node), True)
            return Word(_unescape_double(_text(node)[1:-1]), False)
        if kind == "concatenation":
            parts = [self.word(c) for c in node.named_children]
            literal = "".join(_text(c) for c in node.children if not c.is_named)  # e.g. a bare '$'
            # a brace or glob across the pieces (`{a,b}` is read as `{a` `,b}`; quoted pieces count as text)
            shape = "".join(
                _unquoted_specials(_text(c)) if c.type == "word" else "q" for c in node.named_children
            )
            dynamic = any(p.dynamic for p in parts) or bool(literal) or bool(_GLOB.search(shape))
            return Word("".join(p.text for p in parts) + literal, dynamic)
        if kind in ("simple_expansion", "expansion", "arithmetic_expansion", "ansi_c_string",
                    "translated_string", "brace_expression", "command_substitution"):  # fmt: skip
            self.scan(node)
            return Word(_text(node), True)
        if kind == "process_substitution":
            self.fail("process substitution <(…) is not followed")
            self.scan(node)
            return Word(_text(node), True)
        self.fail(f"the word form {kind.replace('_', ' ')} is not followed")
        self.scan(node)
        return Word(_text(node), True)

    def scan(self, node: Node) -> None:
        """The commands inside a word (substitutions, at any depth) are commands of the line."""
        if node.type in _SUBSTITUTIONS:
            self.substitution(node)
            return
        for child in node.named_children:
            self.scan(child)

    def substitution(self, node: Node) -> None:
        """``$(…)``, backticks, ``<(…)``: their commands are commands of the line. Backticks within
        backticks (`` `a` `b` `` is read as one substitution holding `` a` `b ``) are not understood, and
        each backticked piece is read too, for a deny to see."""
        text = _text(node)
        if text.startswith("`") and "`" in text[1:-1]:
            self.fail("backticks next to backticks are read differently by the grammar and the shell")
            self.reread(text)
        for inner in node.named_children:
            self.statement(inner, ())

    def reread(self, text: str) -> None:
        """What a piece the grammar misread may run: each backticked or ``$(…)`` part, read alone."""
        for inner in _INNER.finditer(text):
            self.parser._read(inner.group(1) or inner.group(2) or "", self.reading, self.via, self.depth + 1)


_SUBSTITUTIONS = ("command_substitution", "process_substitution")
_LITERAL = ("raw_string", "ansi_c_string", "comment")
_OPENERS = re.compile(r"`|\$\(|[<>]\(")
_INNER = re.compile(r"`([^`]*)`|\$\(([^()]*)\)")


def _hidden(node: Node, budget: int = 512) -> bool:
    """A backtick or ``$(`` in the text of a piece the grammar did not read as a substitution (it reads
    `` ${x:-`id`} `` as a word): the shell would run it, so the line is not understood."""
    stack = [node]
    while stack:
        budget -= 1
        if budget < 0:
            return True  # too large to vouch for
        current = stack.pop()
        if current.type in _SUBSTITUTIONS or current.type in _LITERAL:
            continue  # read as commands (walked on their own), or quoted literally
        if (
            current.child_count == 0
            and current.is_named
            and _OPENERS.search(_unquoted_specials(_text(current)))
        ):
            return True
        if not current.is_named and "`" in _text(current):  # a bare backtick token the grammar kept as text
            return True
        if current.type == "expansion" and "@P" in _text(current):  # ${x@P}: runs what x's value holds
            return True
        stack.extend(current.children)
    return False


def _text(node: Node | None) -> str:
    """The node's text, from the line as it was given (the grammar read its ASCII stand-in)."""
    if node is None:
        return ""
    source = _SOURCE.get(None)
    raw = source[node.start_byte : node.end_byte] if source is not None else node.text
    return raw.decode("utf-8", "surrogateescape") if raw is not None else ""


def _unescape(raw: str) -> str:
    """Quote removal of an unquoted word: ``\\x`` is ``x``, a backslash-newline is nothing."""
    out, i = [], 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _unquoted_specials(raw: str) -> str:
    """The characters of a word that are not escaped (a ``\\*`` is a literal star)."""
    return re.sub(r"\\.", "", raw)


def _unescape_double(raw: str) -> str:
    """Quote removal inside ``"…"``: a backslash escapes only ``$ ` " \\`` and newline."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), raw)
