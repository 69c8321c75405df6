"""The secrets in a command line, found by reading it as bash does (tree-sitter-bash, the grammar
:mod:`.shell` reads the rules' commands with): what the decision ledger masks before it keeps a
command (issue #46 item 6), by each command's parsed arguments rather than by words that look alike.

What is a secret here (its value becomes ``<redacted N chars>``; the option, the user name, the host
stay readable):

* an assignment to a variable named for a secret: ``PGPASSWORD=…``, ``MYSQL_PWD=…``, ``GITHUB_TOKEN=…``,
  ``AWS_SECRET_ACCESS_KEY=…`` (before a command, or ``env``'s), never ``PWD=…`` (the working directory);
* a long option named for one, with ``=`` or as the next word: ``--password``, ``--db-password``,
  ``--token``, ``--api-key``, ``--client-secret``, ``--pass`` … (not ``--password-stdin``,
  ``--token-file``, ``--no-password``: they carry none);
* the short options whose value is a password, by the command they belong to (each tool's manual):
  ``mysql``/``mariadb``/``mysqldump``… ``-pPW`` and ``-p PW`` (the latter is, to mysql, a prompt and a
  database name: masked all the same, as its author likely meant a password), ``mongo``/``mongosh``
  ``-p PW``, ``sshpass -p PW``, ``docker``/``podman``/``nerdctl``/``helm``/``oras``… ``login -p PW``,
  ``az login -p PW``, ``redis-cli -a PW``, ``ldapsearch``… ``-w PW``, ``curl -u``/``--user``/``-U``/
  ``--proxy-user user:PW`` (the part after the first colon), ``--oauth2-bearer T``, ``smbclient -U
  user%PW``, ``openssl … pass:PW`` and ``-k PW``, ``htpasswd -b … PW`` (its last word), ``zip -P``,
  ``7z -pPW``, ``ssh-keygen -N``/``-P``, ``gh secret set --body``, ``kubectl --from-literal=KEY=PW``
  (the table of those programs and options: :mod:`.password_options`);
* the value of a secret key a configuration command sets: ``git config user.password PW``, ``npm config
  set …:_authToken=PW``, ``aws configure set aws_secret_access_key PW``;
* what ``echo``/``printf``, a here-string or a here-document feed a command that reads a password
  from its standard input (``--password-stdin``, ``gh auth login --with-token``, ``sudo -S``,
  ``passwd --stdin``, ``chpasswd``), directly or through a pipe;
* inside ``bash -c '…'``, ``ssh host '…'``, ``eval '…'`` (any quoted word holding a command line):
  the same, read again; inside ``$(…)``: the grammar reads those commands itself.

The text around them is masked by :func:`agy_harness.core.decision_record.redact` (URL user-info such as
``postgres://u:PW@h``, ``password=…`` inside a word, ``Authorization: Bearer …``, long random words), so
a line the grammar cannot read is still redacted by those rules. Ordinary words -- ``pwd``, ``echo
token``, ``grep -r password src/``, ``passwd alice``, ``PWD=/x`` -- are kept (a bare ``password``
followed by a word is a secret only in prose: :func:`redact`'s ``spoken``, off for a command line).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from agy_harness.core.decision_record import mask_spans, redact

from .password_options import PROGRAMS, Span, by_program
from .shell import _ASCII, _SOURCE, MAX_TEXT, _text, _unescape, _unescape_double

MAX_DEPTH = 4  # quoted command lines read inside each other
_LANGUAGE = Language(tree_sitter_bash.language())

_SECRET_WORD = (
    r"(?:password|passwd|pass|passphrase|pwd|secret|token|api[-_]?key|access[-_]?key|private[-_]?key"
    r"|credentials?|bearer)"
)
#: a configuration key whose value is a secret (``git config``, ``npm config set``, ``aws configure set``)
_CONFIG_KEY = re.compile(
    r"(?i)(token|password|passwd|secret|_auth|api[-_]?key|access[-_]?key|http-basic|credential)"
)
#: an option that makes a command read a password from its standard input
_STDIN_SECRET = re.compile(r"(?i)^--(?:[a-z0-9-]*(?:pass|token|secret)[a-z0-9-]*-stdin|with-token)$")
_ECHOES = frozenset({"echo", "printf"})
_SECRET_OPTION = re.compile(rf"(?i)^--(?!no-)(?:[a-z0-9]+[-_])*{_SECRET_WORD}$")
_SECRET_NAME = re.compile(
    r"(?i)^(?:\w*(?:password|passwd|secret|token|api_?key|access_?key|private_?key|credentials?)\w*|\w+_pwd|\w+_pass)$"
)
#: a word every rule above needs (a secret's name, a program of the table, ``config``, ``stdin``,
#: ``sudo``...): a line without one is not parsed (most are not: the parse costs ~0.1-0.5 ms)
_MAY_HOLD = re.compile(
    r"(?i)pass|pwd|secret|token|key|credential|bearer|auth|config|stdin|literal|sudo"
    r"|(?<![\w-])(?:mysql[\w-]*|mariadb[\w-]*|mongo\w*|docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|finch"
    r"|az|redis-cli|ldap\w+|7z\w*|u?n?rar|u?n?zip|zipcloak|ssh-keygen|openssl|gh|curl|smbclient)(?![\w-])"
)


def redact_command(text: str) -> str:
    """``text`` (a command line) with its secrets masked (see the module doc), then the free-text rules."""
    return redact(mask_spans(text, secret_spans(text)), spoken=False)


def command_secrets(text: str) -> list[str]:
    """The secret values of the command line ``text`` (without their quotes), longest first."""
    found = {text[start:end].strip("'\"") for start, end in secret_spans(text)}
    return sorted((v for v in found if v), key=len, reverse=True)


def secret_spans(text: str) -> list[Span]:
    """The character ranges of the secret values in the command line ``text``."""
    if len(text) > MAX_TEXT or not _MAY_HOLD.search(text):
        return []
    try:
        return sorted(_spans(text, 0))
    except (RecursionError, ValueError):
        return []  # (the free-text rules still apply)


def _spans(text: str, depth: int) -> Iterator[Span]:
    source = text.encode("utf-8", "surrogateescape")
    offset = _Offsets(text, source)
    for start, end in _parsed(source, depth):
        yield offset(start), offset(end)


def _parsed(source: bytes, depth: int) -> list[tuple[int, int]]:
    """The secret byte ranges of ``source``, read as the rules' reader reads a line: the grammar gets
    every non-ASCII byte as ``a`` (tree-sitter-bash 0.25.1 crashes the process on some high-plane
    characters after a brace: :mod:`.shell`), every word's text is read from ``source`` itself."""
    tree = Parser(_LANGUAGE).parse(source.translate(_ASCII))
    token = _SOURCE.set(source)
    try:
        return list(_walk(tree.root_node, depth))
    finally:
        _SOURCE.reset(token)


class _Offsets:
    """Byte offsets of the parsed text as character offsets."""

    def __init__(self, text: str, source: bytes) -> None:
        self.ascii = len(text) == len(source)
        self.source = source

    def __call__(self, at: int) -> int:
        return at if self.ascii else len(self.source[:at].decode("utf-8", "surrogateescape"))


class _Word:
    def __init__(self, node: Node) -> None:
        self.node, self.raw = node, _text(node)
        self.value = _value(node)

    def after(self, prefix: str) -> Span:
        """The span of the word's value after ``prefix`` (the whole word when quoting hides where)."""
        node, raw = self.node, self.raw
        if node.type in ("raw_string", "string") and raw[1:].startswith(prefix) and "\\" not in raw:
            return node.start_byte + 1 + len(prefix.encode()), node.end_byte - 1
        if raw.startswith(prefix):
            return node.start_byte + len(prefix.encode()), node.end_byte
        return node.start_byte, node.end_byte


def _value(node: Node) -> str:
    raw = _text(node)
    if node.type == "word":
        return _unescape(raw) if "\\" in raw else raw
    if node.type == "raw_string":
        return raw[1:-1]
    if node.type == "string" and all(c.type == "string_content" for c in node.named_children):
        return _unescape_double(raw[1:-1])
    if node.type == "concatenation":
        return "".join(_value(c) for c in node.named_children)
    return raw  # an expansion: its text (what runs is not known here)


def _walk(root: Node, depth: int) -> Iterator[Span]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "command":
            yield from _command(node, depth)
        elif node.type == "pipeline":
            yield from _piped(node)
        elif node.type == "redirected_statement":
            yield from _heredoc(node)
        elif node.type == "variable_assignment":  # (a command's own are read with it)
            yield from _assignment(node)
        if node.type != "command":
            stack.extend(node.children)
        else:  # its substitutions hold commands of their own
            stack.extend(c for c in node.children if c.type not in ("variable_assignment",))


def _assignment(node: Node) -> Iterator[Span]:
    name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
    if name is not None and value is not None and _SECRET_NAME.match(_text(name)):
        yield _Word(value).after("")


def _words(node: Node) -> list[_Word]:
    """A simple command's words (its name first), without its assignments and redirections."""
    words: list[_Word] = []
    for child in node.named_children:
        if child.type == "command_name":
            words.extend(_Word(c) for c in child.named_children[:1])
        elif (
            child.type != "variable_assignment"
            and not child.type.endswith("_redirect")
            and child.type != "comment"
        ):
            words.append(_Word(child))
    return words


def _reads_secret(values: list[str]) -> bool:
    """The command reads a password or token from its standard input (``docker login
    --password-stdin``, ``gh auth login --with-token``, ``sudo -S``, ``passwd --stdin``, ``chpasswd``)."""
    names = {v.rsplit("/", 1)[-1] for v in values}
    if "chpasswd" in names or ("passwd" in names and "--stdin" in values):
        return True
    if "sudo" in names and any(v in ("-S", "--stdin") or _short_flags(v, "S") for v in values):
        return True
    return any(_STDIN_SECRET.match(v) for v in values)


def _short_flags(value: str, flag: str) -> bool:
    """``value`` is a cluster of short options holding ``flag`` (``-kS``)."""
    return value[:1] == "-" and value[1:2] not in ("-", "") and flag in value[1:] and value[1:].isalpha()


def _piped(node: Node) -> Iterator[Span]:
    """``echo PW | docker login --password-stdin``: what the echo prints (or a here-string or
    here-document feeds an earlier command of the pipe) is the secret."""
    parts = [_part(c) for c in node.named_children]
    for j, (command, _) in enumerate(parts):
        if j and command is not None and _reads_secret([w.value for w in _words(command)]):
            for earlier in parts[:j]:
                yield from _fed(*earlier)


def _part(node: Node) -> tuple[Node | None, list[Node]]:
    """A piece of a pipe: its simple command (None: another construct) and its redirections."""
    if node.type == "command":
        return node, [c for c in node.named_children if c.type.endswith("_redirect")]
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c.type.endswith("_redirect")]
        if body is not None and body.type == "command":
            redirects += [c for c in body.named_children if c.type.endswith("_redirect")]
            return body, redirects
        return None, redirects
    return None, []


def _fed(command: Node | None, redirects: list[Node]) -> Iterator[Span]:
    """What a piece of a pipe prints from its own line: an ``echo``/``printf``'s words, a here-string,
    a here-document's body."""
    for redirect in redirects:
        yield from _input(redirect)
    words = _words(command) if command is not None else []
    if words and words[0].value.rsplit("/", 1)[-1] in _ECHOES:
        args = [w for w in words[1:] if not w.value.startswith("-")]
        if words[0].value.endswith("printf") and args and "%" in args[0].value:
            args = args[1:]  # (its format)
        yield from (w.after("") for w in args)


def _input(redirect: Node) -> Iterator[Span]:
    """The text a here-string or here-document gives its command."""
    if redirect.type == "herestring_redirect":
        yield from (_Word(c).after("") for c in redirect.named_children)
    elif redirect.type == "heredoc_redirect":
        for body in (c for c in redirect.named_children if c.type == "heredoc_body"):
            end = body.end_byte - (1 if _text(body).endswith("\n") else 0)
            if end > body.start_byte:
                yield body.start_byte, end


def _heredoc(node: Node) -> Iterator[Span]:
    """``cat <<EOF | docker login --password-stdin`` (the grammar puts the pipe inside the here-document)
    and ``docker login --password-stdin <<EOF``: the here-document is the secret."""
    body = node.child_by_field_name("body")
    for redirect in (c for c in node.named_children if c.type == "heredoc_redirect"):
        readers = [body] if body is not None and body.type == "command" else []
        for pipe in (c for c in redirect.named_children if c.type == "pipeline"):
            readers += [c for c in pipe.named_children if c.type == "command"]
        if any(_reads_secret([w.value for w in _words(r)]) for r in readers):
            yield from _input(redirect)


def _command(node: Node, depth: int) -> Iterator[Span]:
    for child in node.named_children:
        if child.type == "variable_assignment":
            yield from _assignment(child)
    words = _words(node)
    values = [w.value for w in words]
    if _reads_secret(values):  # docker login --password-stdin <<< "PW"
        for child in node.named_children:
            if child.type == "herestring_redirect":
                yield from _input(child)
    if (
        "config" in values or "configure" in values
    ):  # git config user.password PW, npm config set _authToken PW
        for i, value in enumerate(values):
            if i and not value.startswith("-") and _CONFIG_KEY.search(value.split("=", 1)[0]):
                if "=" in value:
                    yield words[i].after(value.split("=", 1)[0] + "=")
                yield from (w.after("") for w in words[i + 1 :] if not w.value.startswith("-"))
                break
    for i, word in enumerate(words):
        value = word.value
        name = value.split("=", 1)[0]
        if i and "=" in value and "&" not in value and name.isidentifier() and _SECRET_NAME.match(name):
            yield word.after(name + "=")  # env NAME=secret, make NAME=secret
        option, eq, rest = value.partition("=")
        if option == "--from-literal" and "=" in rest:  # kubectl create secret --from-literal=KEY=PW
            yield word.after(value.split("=", 2)[0] + "=" + value.split("=", 2)[1] + "=")
        if _SECRET_OPTION.match(option):
            if eq:
                yield word.after(option + "=")
            elif i + 1 < len(words) and not values[i + 1].startswith("-"):
                yield words[i + 1].after("")
        if depth < MAX_DEPTH and word.node.type in ("raw_string", "string") and " " in value:
            inner = word.node.start_byte + 1
            if "\\" not in word.raw and value == word.raw[1:-1]:  # offsets hold inside the quotes
                for start, end in _parsed(value.encode("utf-8", "surrogateescape"), depth + 1):
                    yield inner + start, inner + end
    for i, value in enumerate(values):
        program = value.rsplit("/", 1)[-1]
        if program in PROGRAMS:
            yield from by_program(program, words[i + 1 :], values[i + 1 :])
