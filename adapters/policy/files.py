"""The rule files, in their tiers, read once per session (:class:`RulePolicy` fills
:class:`~agy_harness.ports.policy.GatePolicy`).

Tiers, lowest first: built-in (none are shipped) < project ``<workspace>/.agy-harness/policy/*.toml`` <
user ``$XDG_CONFIG_HOME/agy-harness/policy/*.toml`` (``~/.config`` by default) < admin
``/etc/agy-harness/policy/*.toml``, used only when the directory and each file are owned by root and
writable by no one else. A deny anywhere wins over any allow; the tier orders what is reported.

The project tier lives where agy itself can write: a project file may ``deny`` and ``ask``, but its
``allow`` rules are honoured only when the user trusted that exact content (``agy-harness policy trust
FILE`` records the file's SHA-256 in ``$XDG_CONFIG_HOME/agy-harness/trusted-rules.json``, 0600 in a
0700 directory, under the project tier's own path: :func:`trust_key`); an untrusted or changed file's
allows are ignored, and the session's notice says so. A file that is a symbolic link (or in a linked
``policy`` or ``.agy-harness`` directory) is never trusted: trust is not borrowed through a link.

Fail closed: a file that cannot be read, is not TOML, holds a bad rule or an example that fails, or an
admin directory that is not root's, turns every rule off (everything is asked) and says why
(:meth:`RulePolicy.warnings`: the session's notice at start).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agy_harness.core.policy_match import RuleSet, decide, example_failures, rule_matches
from agy_harness.core.policy_rules import TIERS, Rule, RuleError, rules_from_table
from agy_harness.ports.events import GateOpened
from agy_harness.ports.policy import CommandParser, Decision

from .shell import TreeSitterParser

log = logging.getLogger("agy_harness.policy")

MAX_FILE = 1024 * 1024  # a rules file larger than this is refused
ADMIN_DIR = Path("/etc/agy-harness/policy")


def user_dir(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "agy-harness" / "policy"


def project_dir(workspace: Path) -> Path:
    return workspace / ".agy-harness" / "policy"


def trust_file(env: dict[str, str] | None = None) -> Path:
    """Where the user's trusted project files are recorded (outside every rules directory)."""
    return user_dir(env).parent / "trusted-rules.json"


def read_trust(env: dict[str, str] | None = None) -> dict[str, str]:
    """Trusted project files: resolved path -> the SHA-256 of the content trusted. Unreadable: none."""
    path = trust_file(env)
    try:
        with path.open("rb") as f:
            if not _own_only(os.fstat(f.fileno())):
                log.warning("policy: %s is writable by another user: no project file is trusted", path)
                return {}
            data = json.loads(f.read(MAX_FILE))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("policy: %s cannot be read (%s): no project file is trusted", path, exc)
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def trust_key(path: Path) -> str:
    """The project tier's own path of a rules file, as trust records it: the workspace resolved (the
    session reads it from the real working directory), then ``.agy-harness/policy/NAME`` as they stand,
    never through a link (:func:`linked` says whether one is)."""
    tier = path.absolute().parent
    return str(Path(os.path.realpath(tier.parent.parent)) / tier.parent.name / tier.name / path.name)


def linked(path: Path) -> str:
    """Why ``path`` is not a project tier's own file ("" when it is): it, its ``policy`` directory or
    its ``.agy-harness`` directory is a symbolic link (trust would then be borrowed from where the link
    points), or it is not in a ``.agy-harness/policy`` directory."""
    tier = path.absolute().parent
    if tier.name != "policy" or tier.parent.name != ".agy-harness":
        return "it is not in a project's .agy-harness/policy directory"
    for part in (path.absolute(), tier, tier.parent):
        if part.is_symlink():
            return f"{part} is a symbolic link (trust is never borrowed through a link)"
    return ""


def trust(path: Path, env: dict[str, str] | None = None) -> str:
    """Trust ``path``'s current content (its rules must load; it must be a project tier's own file, not
    a link); returns its SHA-256. Raises RuleError."""
    why = linked(path)
    if why:
        raise RuleError(f"{path}: {why}")
    _, data = read_file(path, TIERS.index("project"), TreeSitterParser(), workspace=path.parent)
    digest = hashlib.sha256(data).hexdigest()
    trusted = read_trust(env)
    trusted[trust_key(path)] = digest
    store = trust_file(env)
    try:
        store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(store.parent, 0o700)
        tmp = store.with_name(f".{store.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(trusted, f, indent=1, sort_keys=True)
        os.replace(tmp, store)
    except OSError as exc:
        raise RuleError(f"{store}: cannot be written ({exc.strerror or exc})") from None
    return digest


@dataclass(frozen=True)
class Tier:
    rank: int
    directory: Path
    root_owned: bool = False  # the admin tier: refused unless root's
    needs_trust: bool = False  # the project tier: its allows need the user's trust of the exact file


def default_tiers(workspace: Path | None = None, env: dict[str, str] | None = None) -> list[Tier]:
    return [
        Tier(TIERS.index("project"), project_dir(workspace or Path.cwd()), needs_trust=True),
        Tier(TIERS.index("user"), user_dir(env)),
        Tier(TIERS.index("admin"), ADMIN_DIR, root_owned=True),
    ]


def _root_only(path: Path) -> bool:
    st = path.stat()
    return st.st_uid == 0 and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _own_only(info: os.stat_result) -> bool:
    """Owned by the user (or root) and writable by no one else: no other local user planted it (group
    write only where the group is the user's own primary group: a umask of 002 with user-private
    groups, as Debian and Ubuntu make them)."""
    group_ok = not info.st_mode & stat.S_IWGRP or info.st_gid == os.getegid() != 0
    return info.st_uid in (os.geteuid(), 0) and group_ok and not info.st_mode & stat.S_IWOTH


def _refuse_loose(path: Path, info: os.stat_result) -> None:
    if not _own_only(info):
        raise RuleError(
            f"{path}: a user rules file or directory must be yours and writable by no one else "
            f"(it is writable by others or owned by uid {info.st_uid}): the rules are not read"
        )


def read_file(
    path: Path,
    tier: int,
    parser: CommandParser,
    *,
    root_owned: bool = False,
    workspace: Path | None = None,
    own_only: bool = False,
) -> tuple[tuple[Rule, ...], bytes]:
    """The rules of one file and its bytes; raises RuleError (the file is not used) on anything wrong,
    examples included. ``own_only``: the file must be the user's (or root's) and writable by no one
    else (the user tier)."""
    try:
        if root_owned and not _root_only(path):
            raise RuleError(f"{path}: an admin rules file must be root's and writable by no one else")
        with path.open("rb") as f:
            if own_only:
                _refuse_loose(path, os.fstat(f.fileno()))
            data = f.read(MAX_FILE + 1)
    except OSError as exc:
        raise RuleError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_FILE:
        raise RuleError(f"{path}: larger than {MAX_FILE} bytes")
    try:
        text = data.decode("utf-8")
        table = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RuleError(f"{path}: not TOML: {exc}") from None
    home = os.environ.get("HOME", "")
    where = str((workspace or Path.cwd()).resolve())
    rules = rules_from_table(
        table,
        name=str(path),
        text=text,
        tier=tier,
        home=home,
        workspace=where,
        file_hash=hashlib.sha256(data).hexdigest()[:16],
    )
    failures = example_failures(rules, parser)
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise RuleError(f"{failures[0]}{more}: the file is not used")
    return rules, data


def _untrusted(path: Path, found: tuple[Rule, ...], linked: str = "") -> str:
    allows = sum(1 for r in found if r.decision == "allow")
    ignored = f"{path}: its {allows} allow rule{'s' if allows != 1 else ''} ignored"
    if linked:
        return f"{ignored} ({linked}; its deny and ask rules hold): copy the file there to trust it"
    return (
        f"{ignored} (a project file agy can write, not trusted as it stands; its deny and ask rules "
        f"hold): trust this content with `agy-harness policy trust {path}`"
    )


def load_rules(
    tiers: Sequence[Tier],
    parser: CommandParser,
    workspace: Path | None = None,
    env: dict[str, str] | None = None,
) -> RuleSet:
    """Every tier's rules, or a RuleSet that is ``off`` and says why."""
    rules: list[Rule] = []
    files: list[str] = []
    notes: list[str] = []
    trusted = read_trust(env) if any(t.needs_trust for t in tiers) else {}
    digest = hashlib.sha256()
    try:
        for tier in tiers:
            if not tier.directory.is_dir():
                continue
            if tier.root_owned and not _root_only(tier.directory):
                raise RuleError(
                    f"{tier.directory}: the admin rules directory must be root's and writable by no one else"
                )
            own_only = not tier.root_owned and not tier.needs_trust  # the user tier: allows as they are
            if own_only:
                _refuse_loose(tier.directory, tier.directory.stat())
            for path in sorted(tier.directory.glob("*.toml")):
                found, data = read_file(
                    path,
                    tier.rank,
                    parser,
                    root_owned=tier.root_owned,
                    workspace=workspace,
                    own_only=own_only,
                )
                if tier.needs_trust and any(r.decision == "allow" for r in found):
                    why = linked(path)
                    if why or trusted.get(trust_key(path)) != hashlib.sha256(data).hexdigest():
                        notes.append(_untrusted(path, found, why))
                        found = tuple(r for r in found if r.decision != "allow")
                rules.extend(found)
                files.append(str(path))
                digest.update(str(path).encode() + b"\0" + hashlib.sha256(data).digest())
    except (RuleError, OSError) as exc:
        log.warning("the rules are off: %s", exc)
        return RuleSet(off=str(exc), rules_hash="", files=tuple(files))
    return RuleSet(
        rules=tuple(rules),
        rules_hash=digest.hexdigest()[:16] if files else "",
        files=tuple(files),
        notes=tuple(notes),
    )


class RulePolicy:
    """:class:`~agy_harness.ports.policy.GatePolicy`: the rules read once, each gate decided on them."""

    def __init__(self, ruleset: RuleSet, parser: CommandParser | None = None) -> None:
        self.ruleset = ruleset
        self.parser = parser or TreeSitterParser()

    def decide(self, gate: GateOpened) -> Decision:
        try:
            line = gate.permission.command_line if gate.permission else ""
            return decide(self.ruleset, gate, self.parser.parse(line) if line else None)
        except Exception as exc:  # a bug here never answers for the human
            log.exception("policy: deciding gate %s failed", gate.gate_id)
            return Decision(reason=f"the rules failed on this request ({exc}): asked")

    def warnings(self) -> list[str]:
        if self.ruleset.off:
            return [f"rules are off, every gate is asked: {self.ruleset.off}"]
        return [f"rules partly off: {note}" for note in self.ruleset.notes]


def load_policy(workspace: Path | None = None, tiers: Sequence[Tier] | None = None) -> RulePolicy:
    """The session's policy: the default tiers (or ``tiers``) read once."""
    parser = TreeSitterParser()
    return RulePolicy(
        load_rules(default_tiers(workspace) if tiers is None else tiers, parser, workspace), parser
    )


PROPOSED = "proposed.toml"  # the user-tier file the board saves confirmed proposals into


def save_proposed(text: str, gate: GateOpened, env: dict[str, str] | None = None) -> Path:
    """Append the rule(s) ``text`` (a human confirmed them) to the user tier's ``proposed.toml`` (0600
    in a 0700 directory), only if the file with them still loads (every example holds) and each new
    rule matches ``gate``, the request the human approved. Raises RuleError (the reason) and saves
    nothing otherwise."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE // 16:
        raise RuleError("the rule is too long")
    target = user_dir(env) / PROPOSED
    parser = TreeSitterParser()
    try:
        old = target.read_bytes() if target.exists() else b""
    except OSError as exc:
        raise RuleError(f"{target}: cannot be read ({exc.strerror or exc})") from None
    joined = old.decode("utf-8", "replace") + ("\n\n" if old else "") + text.strip("\n") + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        for name, body in (("new.toml", text), (PROPOSED, joined)):
            trial = Path(tmp) / name
            trial.write_text(body, encoding="utf-8")
            try:
                new, _ = read_file(trial, TIERS.index("user"), parser)
            except RuleError as exc:
                raise RuleError(
                    str(exc).replace(str(trial), "the rule" if name == "new.toml" else str(target))
                ) from None
            if name == "new.toml":
                if not new:
                    raise RuleError("no [[rule]] to save")
                line = gate.permission.command_line if gate.permission else ""
                parsed = parser.parse(line) if line else None
                for rule in new:
                    if not rule.match or not rule_matches(rule, gate, parsed):
                        raise RuleError(
                            f"rule {rule.id}: it does not match the request you approved "
                            "(keep the request as its first match example)"
                        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(target.parent, 0o700)
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(("\n\n" if old else "") + text.strip("\n") + "\n")
    except OSError as exc:
        raise RuleError(f"{target}: cannot be written ({exc.strerror or exc})") from None
    return target
