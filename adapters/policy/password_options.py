"""The programs whose short options carry a password, each by its manual (``mysql -pPW``, ``sshpass -p``,
``docker login -p``, ``redis-cli -a``, ``ldapsearch -w``, ``curl -u user:PW``, ``smbclient -U user%PW``,
``openssl pass:PW``, ``htpasswd -b``...): the table :mod:`.secrets` reads a parsed command's arguments
against (:func:`by_program`), and the programs it names (:data:`PROGRAMS`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

Span = tuple[int, int]


class Word(Protocol):
    """A parsed word of a command line (:mod:`.secrets`' reading of it)."""

    value: str  # what bash makes of it (quotes and escapes undone)

    def after(self, prefix: str) -> Span:
        """The span of the word's value after ``prefix``."""
        ...


_MYSQL = frozenset(
    [
        "mysql",
        "mysqldump",
        "mysqladmin",
        "mysqlimport",
        "mysqlcheck",
        "mysqlshow",
        "mysqlpump",
        "mysqlsh",
        "mariadb",
        "mariadb-dump",
        "mariadb-admin",
        "mariadb-import",
        "mariadb-check",
        "mariadb-show",
    ]
)
_MONGO = frozenset(
    ["mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongostat", "mongotop"]
)
_LOGIN = frozenset(
    ["docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane", "finch", "az"]
)
_LDAP = frozenset(
    [
        "ldapsearch",
        "ldapmodify",
        "ldapadd",
        "ldapdelete",
        "ldappasswd",
        "ldapwhoami",
        "ldapcompare",
        "ldapmodrdn",
    ]
)
PROGRAMS = _MYSQL | _MONGO | _LOGIN | _LDAP | {
    "sshpass", "redis-cli", "7z", "7za", "7zr", "rar", "unrar", "zip", "unzip", "zipcloak", "ssh-keygen",
    "openssl", "gh", "curl", "smbclient", "htpasswd",
}  # fmt: skip
_CURL_USER = frozenset({"-u", "--user", "-U", "--proxy-user"})


def by_program(program: str, words: Sequence[Word], values: list[str]) -> Iterator[Span]:
    """The short options of ``program`` that carry a password (see the module doc)."""
    short: tuple[str, ...] = ()
    if (
        program in _MYSQL
        or program in _MONGO
        or program == "sshpass"
        or (program in _LOGIN and "login" in values)
    ):
        short = ("-p",)
    elif program == "redis-cli":
        short = ("-a",)
    elif program in _LDAP:
        short = ("-w",)
    elif program in ("7z", "7za", "7zr", "rar", "unrar"):
        short = ("-p",)
    elif program in ("zip", "unzip", "zipcloak"):
        short = ("-P",)
    elif program == "ssh-keygen":
        short = ("-N", "-P")
    elif program == "openssl":
        short = ("-k",)
    elif program == "gh" and "secret" in values:
        short = ("-b",)
    for i, (word, value) in enumerate(zip(words, values, strict=True)):
        nxt = words[i + 1] if i + 1 < len(words) else None
        for flag in short:
            if value == flag and nxt is not None and not nxt.value.startswith("-"):
                yield nxt.after("")
            elif value.startswith(flag) and not value.startswith("--") and len(value) > len(flag):
                yield word.after(flag)
        if program == "curl":
            if value in _CURL_USER and nxt is not None and ":" in nxt.value:
                yield nxt.after(nxt.value.split(":", 1)[0] + ":")
            elif value.startswith("-u") and not value.startswith("--") and ":" in value:
                yield word.after(value.split(":", 1)[0] + ":")
            elif value == "--oauth2-bearer" and nxt is not None:
                yield nxt.after("")
            elif value.startswith(("--user=", "--proxy-user=")) and ":" in value:
                yield word.after(value.split(":", 1)[0] + ":")
        elif program == "smbclient" and value in ("-U", "--user") and nxt is not None and "%" in nxt.value:
            yield nxt.after(nxt.value.split("%", 1)[0] + "%")
        elif program == "gh" and value == "--body" and nxt is not None and "secret" in values:
            yield nxt.after("")
        elif program == "gh" and value.startswith("--body=") and "secret" in values:
            yield word.after("--body=")
        elif program == "openssl" and value.startswith("pass:"):
            yield word.after("pass:")
    if (
        program == "htpasswd"
        and any(v.startswith("-") and "b" in v and not v.startswith("--") for v in values)
        and words
        and not values[-1].startswith("-")
    ):
        yield words[-1].after("")
