"""One error vocabulary (agy_harness.ports.errors): every error the library raises on purpose is one
of its types, "method missing" is said once, and agy's refusal of an answer is classified once, where
it is raised -- the core and the roles read no HTTP status and no agy error text."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agy_harness.adapters.rpc.errors import AmbiguousAgy, NoAgyFound, RpcMethodNotFound, RpcUnreachable
from agy_harness.composition.entrypoints.errors import NO_AGY_HINT, NO_TMUX_TURNS, explain
from agy_harness.ports import errors as E
from agy_harness.ports.protocols import SourceUnavailable

ROOT = Path(__file__).resolve().parents[1]
BUILTIN_ROOTS = {"Exception", "BaseException", "ValueError", "RuntimeError", "OSError", "LookupError"}
#: errors that never leave the module that raises them (each is turned into a vocabulary type there)
CAUGHT_WHERE_RAISED = {
    "adapters/rpc/bounded.py:BodyTooLarge",  # the client turns it into RpcBadResponse
    "adapters/rpc/listeners.py:TablesTooLarge",  # each check that meets it refuses (a peer not told)
}
#: the layers whose errors reach callers: everything but the entry points (their own errors are
#: caught and said by the entry point) and the simulator (it plays agy; its errors are agy's)
LAYERS = ("core", "ports", "adapters", "composition/service", "composition/root")


def _error_classes() -> list[tuple[str, str, list[str]]]:
    found = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("adapters/simulator/"):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    found.append((rel, node.name, [ast.unparse(b).split(".")[-1] for b in node.bases]))
    return found


def test_every_error_the_library_raises_is_one_of_the_vocabularys_types() -> None:
    outside = [
        f"{rel}:{name} {bases}"
        for rel, name, bases in _error_classes()
        if set(bases) & BUILTIN_ROOTS
        and not any(b.startswith(("Agy", "Answer")) or b in E.__all__ for b in bases)
        and not name.startswith("_")
        and f"{rel}:{name}" not in CAUGHT_WHERE_RAISED
        and (rel, name) != ("ports/errors.py", "AgyHarnessError")
    ]
    assert not outside, outside


def test_method_missing_is_said_once() -> None:
    """A 404 / ``unimplemented`` from agy is the vocabulary's MethodMissing, whoever raised it: the
    read driver, turn control and the version gate catch that one type (SourceUnavailable is its
    older name, not a second type)."""
    assert SourceUnavailable is E.MethodMissing
    assert issubclass(RpcMethodNotFound, E.MethodMissing)
    sources = {
        p.relative_to(ROOT).as_posix(): p.read_text()
        for layer in ("composition", "adapters")
        for p in (ROOT / layer).rglob("*.py")
    }
    for gone in ("TurnSendUnavailable", "method_missing", "_is_not_found"):
        assert not [name for name, text in sources.items() if gone in text], gone
    # the one place a 404 is read: where the RPC adapter classifies agy's failures
    assert [name for name, text in sources.items() if "== 404" in text] == ["adapters/rpc/classify.py"]


@pytest.mark.parametrize(
    ("status", "code", "message", "reason"),
    [
        (500, "unknown", "input not registered for step 6", "not_registered"),
        (500, "internal", "boom", "transient"),
        (0, "", "connection reset", "transient"),
        (200, "unavailable", "overloaded", "transient"),
        (429, "", "slow down", "transient"),
        (400, "invalid_argument", "bad", "final"),
        (404, "not_found", "cascade not found", "final"),
    ],
)
def test_a_refused_answer_carries_its_reason(status: int, code: str, message: str, reason: str) -> None:
    assert E.InteractionRejected(message, status=status, code=code).reason == reason
    assert E.InteractionRejected(message, status=status, reason="final").reason == "final"


def _code_strings(path: Path) -> list[str]:
    """String constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def test_the_core_and_the_roles_read_no_http_status_nor_agys_error_text() -> None:
    for layer in ("core", "composition/service"):
        for path in (ROOT / layer).rglob("*.py"):
            source = path.read_text(encoding="utf-8")
            assert ".code" not in source, path
            assert "input not registered" not in " ".join(_code_strings(path)).lower(), path
            tree = ast.parse(source)
            reads = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "status"]
            # a step's or a summary's status is agy's domain; an exception's is not read here
            assert not [n for n in reads if ast.unparse(n.value) in ("exc", "error", "err")], path


def test_the_cli_says_each_kind_of_failure_in_one_line() -> None:
    assert explain(NoAgyFound("no agy process is running")).endswith(NO_AGY_HINT)
    wrong = NoAgyFound.instead(None, "c1", [41234], [41234])
    assert "Check the id" in explain(wrong)
    assert explain(AmbiguousAgy("ports 1 and 2", [1, 2])).startswith("more than one agy answers")
    assert explain(RpcUnreachable("Heartbeat", 0, "unavailable", "refused")).startswith(
        "agy's language server does not answer: refused."
    )
    assert explain(E.NoTurnSender("no turn sender can reach this agy")) == NO_TMUX_TURNS
    assert explain(E.AgyUnreachable("gone")).startswith("agy's language server does not answer: gone")
    for line in map(explain, (wrong, E.NoTurnSender("x"), E.AgyCallFailed("x"))):
        assert "\n" not in line
