"""The wrappers whose command is another command (``bash -c``, ``env``, ``timeout``, ``xargs``,
``find -exec``, ``sudo``...), peeled off one simple command so that the rules see what runs
(:mod:`.shell` reads the line and hands each simple command here through the :class:`Walker` port;
each wrapper's options are :mod:`.wrapper_options`).

A wrapper read exactly (its options as its manual lists them) passes its command on: the rules see
that command, as an allow or a deny would. A wrapper option that rewrites the command's words (or
where they run), an option not listed, and every runner in :data:`~.wrapper_options.RUNNERS` make the
line *not understood* (an allow never matches), and each later word is still tried as the command and
each later stretch of words as a script, so that a deny holds (:meth:`Unwrap.reach`)."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from agy_harness.ports.policy import Redirect, SimpleCommand

from .wrapper_options import RUNNERS, SPECS, Options, Spec, read_options

MAX_DEPTH = 8  # wrappers within wrappers (bash -c "bash -c '…'"): deeper is not understood
MAX_READS = 4096  # scripts read for one line (a runner's words are each read): more is not understood
MAX_CHARS = 1 << 20  # and their characters
MAX_COMMANDS = 20_000  # the simple commands of one line
_WINDOW = 16  # behind a runner: the words from each start tried as its command (a deny's prefix)
_JOINS = 64  # behind a runner: the first starts whose next _JOINS words are joined and read as a script
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh"})
_SCRIPTY = frozenset(" \t\n;&|$`'\"<>()")
#: builtins that evaluate a word as a variable name or an arithmetic subscript (``printf -v 'a[$(id)]'``
#: runs id): a literal substitution in their words is not followed
_EVALUATING = frozenset({"printf", "read", "test", "[", "unset", "let", "declare", "typeset", "local",
                         "export", "readonly", "mapfile", "readarray", "wait", "getopts", "alias"})  # fmt: skip


@dataclass
class Word:
    text: str
    dynamic: bool


@dataclass
class Reading:
    commands: list[SimpleCommand] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    reads: int = 0  # scripts read so far (bounded by MAX_READS)
    chars: int = 0  # their characters (bounded by MAX_CHARS)
    reached: set[tuple[str, ...]] = field(default_factory=set)  # the words a runner's reach tried
    scripts: set[str] = field(default_factory=set)  # the scripts a runner's reach read

    def fail(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)


class Walker(Protocol):
    """What unwrapping needs of the reader (:class:`.shell._Walker` fills it)."""

    reading: Reading

    def fail(self, reason: str) -> None: ...

    def add(self, command: SimpleCommand) -> None: ...

    def script(self, text: str, via: tuple[str, ...]) -> None:
        """Read ``text`` as a shell script one level deeper, its commands reached through ``via``."""
        ...


Handler = Callable[["Unwrap", list[Word], tuple[str, ...], tuple[str, ...]], None]


class Unwrap:
    """Peel the wrappers off one simple command: what each runs is the command the rules see."""

    def __init__(self, walker: Walker, redirects: tuple[Redirect, ...], assignments: tuple[str, ...]) -> None:
        self.w, self.redirects, self.assignments = walker, redirects, assignments

    def emit(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        literal = [w.text for w in words[1:] if not w.dynamic]
        if (
            words
            and posixpath.basename(words[0].text) in _EVALUATING
            and any("$(" in t or "`" in t for t in literal)
        ):
            self.w.fail(f"{words[0].text} evaluates a name or a subscript holding a substitution")
        argv = tuple(w.text for w in words)
        dynamic = tuple(i for i, w in enumerate(words) if w.dynamic)
        self.w.add(
            SimpleCommand(
                argv=argv, dynamic=dynamic, redirects=self.redirects, assignments=assignments, via=via
            )
        )

    def run(
        self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...] | None = None
    ) -> None:
        assignments = self.assignments if assignments is None else assignments
        if not words:
            return
        if words[0].dynamic:
            self.emit(words, via, assignments)
            return
        name = posixpath.basename(words[0].text).lower()  # (`SUDO` is sudo where names fold case)
        handler = _handler(name)
        if handler is None:
            self.emit(words, via, assignments)
            return
        if len(via) > MAX_DEPTH:
            self.w.fail("wrappers nest too deep")
            self.emit(words, via, assignments)
            return
        handler(self, words, (*via, name), assignments)

    # -- reading a wrapper's options ------------------------------------------------------------

    def options(self, words: list[Word], via: tuple[str, ...], spec: Spec) -> Options | None:
        """The wrapper's options read (None: not followed; the line is then not understood and a
        deny still reaches the later words). A rewriting option makes the line not understood."""
        name = words[0].text
        found = read_options([w.text for w in words], spec)
        if found.command is None:
            what = "option " if found.unknown.startswith("-") else "word "
            self.reach(words, via, f"{name} {what}{found.unknown} is not followed")
            return None
        if any(w.dynamic for w in words[1 : min(found.command, len(words))]):
            self.reach(words, via, f"an option of {name} is expanded when it runs")
            return None
        for option in found.seen:
            if option in spec.rewrites:
                self.w.fail(f"{name} {option} changes the command's words or where it runs: not followed")
        return found

    def reach(self, words: list[Word], via: tuple[str, ...], reason: str) -> None:
        """A runner (or a wrapper not followed): the line is not understood; the runner itself, each
        later word as the start of its command (its next words after it: a deny matches a prefix),
        each later word holding shell syntax as a script (``script -qc 'rm x'``), and each stretch of
        words from the first ones as a script (``ssh host 'ls;' rm x``: ssh joins them) are commands
        of the line, for a deny to see. Windows and scripts already read are not read again (a
        runner inside a runner's script sees the same words)."""
        self.w.fail(reason)
        self.emit(words, via[:-1], self.assignments)
        reading = self.w.reading
        inner = (*via, "?")
        for k in range(1, len(words)):
            word = words[k]
            if word.dynamic:
                continue
            window = words[k : k + _WINDOW]
            key = tuple(w.text for w in window)
            if not word.text.startswith("-") and key not in reading.reached:
                reading.reached.add(key)
                self.emit(window, inner, self.assignments)
            joined = " ".join(w.text for w in words[k : k + _JOINS]) if k <= _JOINS else ""
            value = word.text.partition("=")[2]  # -oProxyCommand=…, --command=…: an option's value
            for text in (joined, word.text, value):
                if text not in reading.scripts and _SCRIPTY.intersection(text):
                    reading.scripts.add(text)
                    self.w.script(text, inner)

    def wrapped(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """A wrapper read by its options table: its command (after options and positional words)."""
        found = self.options(words, via, SPECS[via[-1]])
        if found is None or found.command is None:
            return
        if found.command >= len(words):
            self.emit(words, via[:-1], assignments)  # no command: the wrapper itself
        else:
            self.run(words[found.command :], via, assignments)

    # -- wrappers read one by one -------------------------------------------------------------------

    def shell(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        i, script = 1, False
        while i < len(words) and (words[i].text.startswith(("-", "+")) and not words[i].dynamic):
            t = words[i].text
            if t in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                i += 1
            elif not t.startswith("--") and "c" in t:
                script = True
            i += 1
        if not script:  # a script file or standard input: the shell itself is what the rules see
            self.emit(words, via[:-1], assignments)
            return
        if i >= len(words) or words[i].dynamic:
            self.w.fail(f"the script of {words[0].text} -c is expanded when it runs")
            self.emit(words, via[:-1], assignments)
            return
        self.w.script(words[i].text, via)

    def eval(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        if len(words) > 1 and words[1].text == "--" and not words[1].dynamic:
            words = [words[0], *words[2:]]  # a builtin's end of options
        if any(w.dynamic for w in words[1:]):
            self.w.fail("eval of an expanded word is not followed")
            self.emit(words, via[:-1], assignments)
            return
        self.w.script(" ".join(w.text for w in words[1:]), via)

    def env(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        found = self.options(words, via, SPECS["env"])
        if found is None or found.command is None:
            return
        i = found.command
        if i < len(words) and words[i].text == "-" and not words[i].dynamic:
            i += 1  # `env -`: as -i
        extra = list(assignments)
        while i < len(words) and "=" in words[i].text and not words[i].text.startswith("="):
            extra.append(words[i].text)
            i += 1
        split = found.values.get("-S", found.values.get("--split-string"))
        if split is not None:  # its words are split from the string (for a deny: read as a script)
            self.w.script(" ".join([split, *(w.text for w in words[i:])]), (*via, "?"))
        if i >= len(words):
            if split is None:
                self.emit(words, via[:-1], assignments)  # `env` alone prints the environment
            return
        self.run(words[i:], via, tuple(extra))

    def xargs(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        found = self.options(words, via, SPECS["xargs"])
        if found is None or found.command is None:
            return
        if found.command >= len(words):
            self.emit([Word("echo", False)], via, assignments)  # xargs alone runs echo
        else:
            self.run(words[found.command :], via, assignments)

    def command(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        if len(words) > 1 and words[1].text in ("-v", "-V"):  # only says what a name is
            self.emit(words, via[:-1], assignments)
            return
        self.wrapped(words, via, assignments)

    def flock(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """``flock [options] FILE COMMAND...``, or ``flock [options] FILE -c SCRIPT`` (the word right
        after FILE; util-linux flock.c)."""
        found = self.options(words, via, SPECS["flock"])
        if found is None or found.command is None:
            return
        i = found.command
        if i < len(words) and words[i].text in ("-c", "--command") and not words[i].dynamic:
            if i + 2 != len(words) or words[i + 1].dynamic:
                self.reach(words, via, "the script of flock -c is expanded or not one word")
                return
            self.w.script(words[i + 1].text, via)
        elif i >= len(words):
            self.emit(words, via[:-1], assignments)
        else:
            self.run(words[i:], via, assignments)

    def watch(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """``watch [options] COMMAND...``: the words joined and run by ``sh -c`` (``-x``: as argv)."""
        found = self.options(words, via, SPECS["watch"])
        if found is None or found.command is None:
            return
        i = found.command
        if i >= len(words):
            self.emit(words, via[:-1], assignments)
        elif "-x" in found.seen or "--exec" in found.seen:
            self.run(words[i:], via, assignments)
        elif any(w.dynamic for w in words[i:]):
            self.reach(words, via, "watch of an expanded word is not followed")
        else:
            self.w.script(" ".join(w.text for w in words[i:]), via)

    def trap(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """``trap [--] 'SCRIPT' SIGNAL...``: the script runs later, on the signal."""
        k = 2 if len(words) > 1 and words[1].text == "--" and not words[1].dynamic else 1
        if len(words) >= k + 2 and words[k].text not in ("-", "-l", "-p", "--"):
            if words[k].dynamic:
                self.reach(words, via, "the script of trap is expanded when it runs")
            else:
                self.w.script(words[k].text, via)
        else:
            self.emit(words, via[:-1], assignments)

    def find(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """find itself (its own ``-delete`` is its rule's to allow), and each ``-exec``'s command: run
        once per file found, with the file's name put in for ``{}`` (in its directory for -execdir),
        so the line is not understood; a deny sees the command."""
        self.emit(words, via[:-1], assignments)
        i = 1
        while i < len(words):
            if words[i].text in ("-exec", "-execdir", "-ok", "-okdir") and not words[i].dynamic:
                self.w.fail(f"find {words[i].text} puts the names of the files found into its command")
                end = i + 1
                while end < len(words) and words[end].text not in (";", "+"):
                    end += 1
                self.run(words[i + 1 : end], (*via, words[i].text), assignments)
                i = end
            i += 1

    def runner(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        self.reach(words, via, f"{words[0].text} runs its arguments as a command: not followed for an allow")


_BY_NAME: dict[str, Handler] = {
    "eval": Unwrap.eval, "env": Unwrap.env, "xargs": Unwrap.xargs, "command": Unwrap.command,
    "flock": Unwrap.flock, "watch": Unwrap.watch, "trap": Unwrap.trap, "find": Unwrap.find,
}  # fmt: skip


def _handler(name: str) -> Handler | None:
    """How ``name`` runs another command (None: it is a command of its own)."""
    if name in _SHELLS:
        return Unwrap.shell
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name in SPECS:
        return Unwrap.wrapped
    if name in RUNNERS:
        return Unwrap.runner
    return None


def runs_another(name: str) -> bool:
    """Whether the command ``name`` runs another command (a shell, a wrapper or a runner)."""
    return _handler(posixpath.basename(name).lower()) is not None
