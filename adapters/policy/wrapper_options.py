"""What each wrapper command takes before the command it runs: its options as its real manual lists
them, read the way ``getopt_long`` reads them (pure data and one reader; :mod:`.wrappers` uses them).

Evidence (checked against the real binaries' ``--help`` on Debian 12: GNU coreutils 9.1 ``env``,
``timeout``, ``nice``, ``nohup``, ``stdbuf``; findutils 4.9 ``xargs``; util-linux 2.38 ``setsid``,
``flock``, ``ionice``, ``chrt``, ``taskset``; procps 4.0 ``watch``; bash 5.2's ``help`` for ``time``,
``command``, ``exec``, ``builtin``; and by tests/policy/test_wrappers_real.py, which runs them): each
stops at its first word that is not an option (``getopt``'s ``+``), takes a short option's value
attached or as the next word, and an *optional* value (``xargs -i[R]``, ``watch -d[=permanent]``)
only attached. An abbreviated long option (``--repl``), a bundle we cannot read, or an option not
listed is *not followed*: the line is then not understood (asked), never guessed.

``rewrites``: options that change which words run, where they run, or read them from elsewhere
(``xargs -I/-i/--replace`` substitute the input into the command's words, ``-a`` reads them from a
file, ``--process-slot-var`` sets a variable in the command's environment; ``env -S`` splits a string
into the command, ``-C`` moves it to another directory; ``exec -a`` renames it): a rule cannot read
what will run, so the line is not understood (an allow never matches; a deny still sees the words).

``RUNNERS``: commands that run their arguments as a command in ways we do not model one by one (as
another user, in another namespace or machine, traced, joined into a script...): the line is not
understood (an allow never matches through them), and for a deny every later word is tried as the
start of the command and every later stretch of words as a script (``ssh host 'rm x'``,
``script -qc 'rm x'``, ``su -c``, ``parallel ::: 'rm x'``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NUMBER = re.compile(r"^-[+-]?\d+$")  # nice's -10, --10, -+10


@dataclass(frozen=True)
class Spec:
    """One wrapper's options (``-x`` short, ``--xx`` long) and the words it takes before the command."""

    flags: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()  # take a value (attached, ``=``, or the next word)
    optional: frozenset[str] = frozenset()  # take a value only attached (``-iR``, ``--replace=R``)
    rewrites: frozenset[str] = frozenset()
    positional: int = 0  # words before the command (timeout's DURATION, flock's FILE, chrt's PRIORITY)
    shape: str = ""  # what a positional word must look like (else not followed: chrt -o's PRIORITY
    # is optional in newer util-linux, so `chrt -o npm test` is read as nothing, never as `test`)
    numeric: bool = False  # ``nice -10``: a number as an option
    plain: bool = False  # no option at all (``nohup``, ``builtin``): the first word is the command


def _spec(flags: str = "", values: str = "", optional: str = "", rewrites: str = "", **kw: object) -> Spec:
    return Spec(
        flags=frozenset(flags.split()),
        values=frozenset(values.split()),
        optional=frozenset(optional.split()),
        rewrites=frozenset(rewrites.split()),
        **kw,  # type: ignore[arg-type]
    )


SPECS: dict[str, Spec] = {
    "env": _spec(
        "-i --ignore-environment -0 --null -v --debug --list-signal-handling",
        "-u --unset -C --chdir -S --split-string",
        "--block-signal --default-signal --ignore-signal",
        "-S --split-string -C --chdir",
    ),
    "timeout": _spec(
        "-v --verbose --foreground --preserve-status",
        "-k --kill-after -s --signal",
        positional=1,
        shape=r"[0-9.]+[smhd]?",
    ),
    "nice": _spec("", "-n --adjustment", numeric=True),
    "nohup": _spec(),  # (only --help, --version and --)
    "stdbuf": _spec("", "-i --input -o --output -e --error"),
    "setsid": _spec("-c --ctty -f --fork -w --wait"),
    "flock": _spec(
        "-s --shared -x -e --exclusive -u --unlock -n --nb --nonblock -o --close -F --no-fork --verbose",
        "-w --wait --timeout -E --conflict-exit-code",
        positional=1,
    ),
    "ionice": _spec("-t --ignore", "-c --class -n --classdata"),
    "chrt": _spec(
        "-b --batch -d --deadline -f --fifo -i --idle -o --other -r --rr -R --reset-on-fork -v --verbose",
        "-T --sched-runtime -P --sched-period -D --sched-deadline",
        positional=1,
        shape=r"[0-9]+",
    ),
    "taskset": _spec("-c --cpu-list", positional=1, shape=r"(0x)?[0-9a-fA-F,:-]+"),
    "xargs": _spec(
        "-0 --null -o --open-tty -p --interactive -r --no-run-if-empty -t --verbose -x --exit --show-limits",
        "-a --arg-file -d --delimiter -E -I -L --max-lines -n --max-args -P --max-procs -s --max-chars "
        "--process-slot-var",
        "-e --eof -i --replace -l",
        "-a --arg-file -I -i --replace --process-slot-var",
    ),
    "watch": _spec(
        "-b --beep -c --color -e --errexit -g --chgexit -p --precise -t --no-title -w --no-wrap -x --exec",
        "-q --equexit -n --interval",
        "-d --differences",
    ),
    "time": _spec("-p"),  # bash's keyword (GNU time's -o FILE, -f FORMAT: not followed)
    "command": _spec("-p"),  # (-v, -V: only say what a name is; handled before)
    "exec": _spec("-c -l", "-a", rewrites="-a"),
    "builtin": _spec(),
    "coproc": _spec(plain=True),
    "busybox": _spec(plain=True),
    "toybox": _spec(plain=True),
}

RUNNERS = frozenset({
    "sudo", "doas", "pkexec", "su", "runuser", "sg", "chroot", "unshare", "nsenter", "setpriv", "capsh",
    "strace", "ltrace", "valgrind", "gdb", "script", "ssh", "rsh", "sshpass", "systemd-run",
    "run0", "firejail", "bwrap", "parallel", "sem", "fakeroot", "faketime", "numactl",
    "cgexec", "prlimit", "setarch", "linux32", "linux64", "i386", "x86_64", "catchsegv", "torsocks",
    "torify", "proxychains", "proxychains4", "xvfb-run", "dbus-run-session", "dbus-launch", "unbuffer",
    "chpst", "setuidgid", "envdir", "softlimit", "start-stop-daemon", "daemonize",
    "dtach", "rlwrap", "ssh-agent", "cpulimit", "trickle", "schedtool", "with-lock-ex", "lxc-attach",
    "flatpak-spawn", "distrobox-enter", "xterm",
})  # fmt: skip


@dataclass
class Options:
    """What :func:`read_options` found: the index of the command (None: an option not followed, named
    in ``unknown``), the options seen, and their values."""

    command: int | None
    seen: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)
    unknown: str = ""


def read_options(words: list[str], spec: Spec) -> Options:
    """``words[0]`` is the wrapper; read its options as getopt does (stopping at the first word that is
    not one), then skip its positional words."""
    out = Options(command=None)
    i = 1
    while i < len(words) and not spec.plain:
        t = words[i]
        if t == "--":
            i += 1
            break
        if not t.startswith("-") or t == "-":
            break
        if spec.numeric and _NUMBER.match(t):
            out.seen.append("-n")
            i += 1
            continue
        if t.startswith("--"):
            key, eq, value = t.partition("=")
            if key in spec.flags and not eq:
                out.seen.append(key)
            elif key in spec.optional:
                out.seen.append(key)
                out.values[key] = value
            elif key in spec.values:
                if not eq:
                    if i + 1 >= len(words):
                        out.unknown = t
                        return out
                    i += 1
                    value = words[i]
                out.seen.append(key)
                out.values[key] = value
            else:
                out.unknown = t
                return out
            i += 1
            continue
        j = 1  # a bundle of short options: -0r, -n5, -I{}
        while j < len(t):
            key = "-" + t[j]
            if key in spec.flags:
                out.seen.append(key)
                j += 1
            elif key in spec.optional:
                out.seen.append(key)
                out.values[key] = t[j + 1 :]
                break
            elif key in spec.values:
                value = t[j + 1 :]
                if not value:
                    if i + 1 >= len(words):
                        out.unknown = t
                        return out
                    i += 1
                    value = words[i]
                out.seen.append(key)
                out.values[key] = value
                break
            else:
                out.unknown = t
                return out
        i += 1
    if spec.shape and any(not re.fullmatch(spec.shape, w) for w in words[i : i + spec.positional]):
        out.unknown = " ".join(words[i : i + spec.positional])
        return out
    out.command = i + spec.positional
    return out
