"""The wrappers whose command is another command (``bash -c``, ``env``, ``timeout``, ``xargs``,
``find -exec``, ``sudo``...), peeled off one simple command so that the rules see what runs
(:mod:`.shell` reads the line; this module is its half that knows each wrapper's options)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agy_harness.ports.policy import Redirect, SimpleCommand

if TYPE_CHECKING:
    from .shell import _Walker as Walker

MAX_DEPTH = 8  # wrappers within wrappers (bash -c "bash -c '…'"): deeper is not understood
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh"})
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

    def fail(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)


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
        name = posixpath.basename(words[0].text)
        handler: Any = getattr(self, "_" + name, None) if name.isidentifier() else None
        if name in _SHELLS:
            handler = self._shell
        if handler is None or len(via) > MAX_DEPTH:
            self.emit(words, via, assignments)
            return
        handler(words, (*via, name), assignments)

    def _options(self, words: list[Word], with_value: frozenset[str], flags: frozenset[str]) -> int | None:
        """The index of the wrapped command after the wrapper's options; None (not understood) at an
        option we do not know."""
        i = 1
        while i < len(words):
            w = words[i]
            if w.dynamic:
                self.w.fail(f"an option of {words[0].text} is expanded when it runs")
                return None
            t = w.text
            if t == "--":
                return i + 1
            if not t.startswith("-") or t == "-":
                return i
            key = t.split("=", 1)[0]
            if key in with_value and "=" not in t:
                i += 2
            elif (
                (not t.startswith("--") and t[:2] in with_value) or key in with_value or key in flags
            ):  # -oL, -I{}: the value attached
                i += 1
            else:
                self.w.fail(f"{words[0].text} option {t} is not followed")
                return None
        return i

    def _shell(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
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
        self.w.parser._read(words[i].text, self.w.reading, via, self.w.depth + 1)

    def _eval(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        if any(w.dynamic for w in words[1:]):
            self.w.fail("eval of an expanded word is not followed")
            self.emit(words, via[:-1], assignments)
            return
        self.w.parser._read(" ".join(w.text for w in words[1:]), self.w.reading, via, self.w.depth + 1)

    def _env(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        i = self._options(
            words, frozenset({"-u", "--unset"}), frozenset({"-i", "--ignore-environment", "-0", "--null"})
        )
        if i is None:
            self._unknown(words, via, assignments)
            return
        extra = list(assignments)
        while i < len(words) and "=" in words[i].text and not words[i].text.startswith("="):
            extra.append(words[i].text)
            i += 1
        if i >= len(words):
            self.emit(words, via[:-1], assignments)  # `env` alone prints the environment
            return
        self.run(words[i:], via, tuple(extra))

    def _wrapper(
        self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...],
        with_value: frozenset[str], flags: frozenset[str], skip: int = 0,
    ) -> None:  # fmt: skip
        i = self._options(words, with_value, flags)
        if i is None:
            self._unknown(words, via, assignments)
        elif i + skip >= len(words):
            self.emit(words, via[:-1], assignments)
        else:
            self.run(words[i + skip :], via, assignments)

    def _unknown(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """A wrapper whose options we do not follow (the line is not understood, so nothing is allowed):
        the wrapper itself, and each of its later words as the command it may run, for a deny to see."""
        self.emit(words, via[:-1], assignments)
        for k in range(1, min(len(words), 16)):
            if not words[k].dynamic and not words[k].text.startswith("-"):
                self.run(words[k:], (*via, "?"), assignments)

    def _timeout(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        values = frozenset({"-s", "--signal", "-k", "--kill-after"})
        flags = frozenset({"--foreground", "--preserve-status", "-v", "--verbose"})
        self._wrapper(words, via, assignments, values, flags, skip=1)

    def _nice(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        flags = frozenset(f"-{n}" for n in range(-20, 20))  # -10 and --10 (the old adjustment forms)
        self._wrapper(words, via, assignments, frozenset({"-n", "--adjustment"}), flags)

    def _nohup(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        self._wrapper(words, via, assignments, frozenset(), frozenset())

    def _time(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        self._wrapper(words, via, assignments, frozenset(), frozenset({"-p"}))

    def _builtin(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        self._wrapper(words, via, assignments, frozenset(), frozenset())

    def _exec(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        self._wrapper(words, via, assignments, frozenset({"-a"}), frozenset({"-c", "-l", "-cl", "-lc"}))

    def _command(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        if len(words) > 1 and words[1].text in ("-v", "-V"):  # only says what a name is
            self.emit(words, via[:-1], assignments)
            return
        self._wrapper(words, via, assignments, frozenset(), frozenset({"-p"}))

    def _stdbuf(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        values = frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})
        self._wrapper(words, via, assignments, values, frozenset())

    def _sudo(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        values = frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "--user", "--group"})
        flags = frozenset({"-E", "-H", "-n", "-S", "-b", "-k", "-i", "-s", "-P", "--preserve-env"})
        self._wrapper(words, via, assignments, values, flags)

    _doas = _sudo

    _pkexec = _sudo

    def _su(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """``su [-l] [USER] -c SCRIPT``: the script, as root (never allowed through)."""
        for k in range(1, len(words) - 1):
            if words[k].text in ("-c", "--command") and not words[k].dynamic:
                self._script(words, k + 1, via, assignments)
                return
        self.emit(words, via[:-1], assignments)  # an interactive shell: su itself

    def _script(self, words: list[Word], k: int, via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        if k >= len(words) or words[k].dynamic:
            self.w.fail(f"the script of {words[0].text} is expanded when it runs")
            self._unknown(words, via, assignments)
            return
        self.w.parser._read(words[k].text, self.w.reading, via, self.w.depth + 1)

    def _trap(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """``trap 'SCRIPT' SIGNAL...``: the script runs later, on the signal."""
        if len(words) >= 3 and words[1].text not in ("-", "-l", "-p", "--"):
            self._script(words, 1, via, assignments)
        else:
            self.emit(words, via[:-1], assignments)

    def _watch(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """``watch [options] COMMAND...``: the words joined and run by ``sh -c``, again and again."""
        values = frozenset({"-n", "--interval", "-d", "--differences", "-q", "--equexit"})
        flags = frozenset({"-t", "--no-title", "-b", "--beep", "-e", "--errexit", "-g", "--chgexit",
                           "-c", "--color", "-x", "--exec", "-p", "--precise", "-w", "--no-wrap"})  # fmt: skip
        i = self._options(words, values, flags)
        if i is None:
            self._unknown(words, via, assignments)
            return
        if i >= len(words):
            self.emit(words, via[:-1], assignments)
            return
        if any(w.dynamic for w in words[i:]):
            self.w.fail("watch of an expanded word is not followed")
            self._unknown(words, via, assignments)
            return
        self.w.parser._read(" ".join(w.text for w in words[i:]), self.w.reading, via, self.w.depth + 1)

    def _busybox(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """``busybox rm x`` is ``rm x`` (a multi-call binary)."""
        self._wrapper(words, via, assignments, frozenset(), frozenset())

    _toybox = _busybox

    def _setsid(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        self._wrapper(words, via, assignments, frozenset(), frozenset({"-f", "-w", "-c", "--fork", "--wait"}))

    def _flock(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """``flock [options] FILE COMMAND...`` (``-c SCRIPT``: a script)."""
        for k in range(1, len(words) - 1):
            if words[k].text in ("-c", "--command"):
                self._script(words, k + 1, via, assignments)
                return
        flags = frozenset({"-s", "-x", "-n", "-u", "-o", "--shared", "--exclusive", "--nonblock", "--unlock"})
        self._wrapper(words, via, assignments, frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}),
                      flags, skip=1)  # fmt: skip

    def _chroot(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        """``chroot DIR COMMAND...``: as root (never allowed through)."""
        self._wrapper(words, via, assignments, frozenset({"--userspec", "--groups"}), frozenset(), skip=1)

    def _ionice(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        values = frozenset({"-c", "-n", "--class", "--classdata"})
        self._wrapper(words, via, assignments, values, frozenset({"-t", "--ignore"}))

    def _coproc(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        self._wrapper(words, via, assignments, frozenset(), frozenset())

    def _xargs(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        values = frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter",
                            "--max-lines", "--max-args", "--max-procs", "--max-chars", "--replace"})  # fmt: skip
        flags = frozenset({"-0", "-r", "-t", "-p", "-x", "--null", "--no-run-if-empty", "--verbose",
                           "--interactive", "--exit"})  # fmt: skip
        i = self._options(words, values, flags)
        if i is None:
            self._unknown(words, via, assignments)
        elif i >= len(words):
            self.emit([Word("echo", False)], via, assignments)  # xargs alone runs echo
        else:
            self.run(words[i:], via, assignments)

    def _find(self, words: list[Word], via: tuple[str, ...], assignments: tuple[str, ...]) -> None:
        self.emit(words, via[:-1], assignments)  # find itself (its own -delete is its rule's to allow)
        i = 1
        while i < len(words):
            if words[i].text in ("-exec", "-execdir", "-ok", "-okdir") and not words[i].dynamic:
                end = i + 1
                while end < len(words) and words[end].text not in (";", "+"):
                    end += 1
                self.run(words[i + 1 : end], (*via, words[i].text), assignments)
                i = end
            i += 1
