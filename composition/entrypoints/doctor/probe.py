"""``agy-harness doctor``: a read-only probe of a live agy (the command line: :mod:`.command`).

It reports agy's version, which RPC methods this project uses are present or missing, and every
field, step type and enum value it saw that the project does not know (a drift report a user can
paste into an issue). It only reads: the probes are the version gate's, from the one table of agy's
surface (:mod:`agy_harness.composition.root.surface`: unary methods that could change something get
an empty request that names no conversation, the stream is opened for its first frame and closed,
one that would create a conversation is not probed at all). agy is bound and its client built by the
composition root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from agy_harness.core.steps import as_dict, as_str, steps_from_update
from agy_harness.ports.errors import AgyAmbiguous, AgyCallFailed, AgyNotBound

from ...root.container import bind_endpoint, make_container
from ...root.surface import probe_surface
from ..errors import EXIT_FAILURE, EXIT_OK
from ..fit import say
from . import schema as K
from .environment import Check, environment
from .gates import gate_report, render_gates


@dataclass
class Drift:
    """Unknown things seen, each once, with where and an example value."""

    seen: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, where: str, what: str, example: Any) -> None:
        text = json.dumps(example, ensure_ascii=False)[:80] if not isinstance(example, str) else example[:80]
        self.seen.setdefault((where, what), text)

    def unknown_paths(self, where: str, value: dict[str, Any], known: frozenset[str]) -> None:
        paths = K.keypaths(value)
        for path in sorted(paths - known):
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            if parent and parent in paths and parent not in known:
                continue  # the topmost unknown path stands for its subtree
            self.add(where, f"field {path}", _at(value, path))

    def step(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        step_type = as_str(raw.get("type")).removeprefix("CORTEX_STEP_TYPE_")
        status = as_str(raw.get("status")).removeprefix("CORTEX_STEP_STATUS_")
        if step_type not in K.known_step_types():
            self.add("step", f"type CORTEX_STEP_TYPE_{step_type}", sorted(raw)[:8])
            return  # its fields are all new: the type says it
        where = f"step {step_type}"
        if status and status not in K.KNOWN_STATUSES:
            self.add(where, f"status CORTEX_STEP_STATUS_{status}", status)
        requested = as_dict(raw.get("requestedInteraction"))
        for key in requested:
            if key not in K.KNOWN_INTERACTIONS:
                self.add(where, f"requestedInteraction kind {key}", requested[key])
        persist = as_str(as_dict(requested.get("permission")).get("persistSuggestionType"))
        if persist and persist not in K.KNOWN_PERSIST:
            self.add(where, f"persistSuggestionType {persist}", persist)
        self.unknown_paths(where, raw, K.known_step_paths())

    def catalog(self, answer: dict[str, Any]) -> None:
        catalog = as_dict(answer.get("response")) or answer
        for key in catalog:
            if key not in K.CATALOG_FIELDS:
                self.add("GetAvailableModels", f"field response.{key}", catalog[key])
        for entry in as_dict(catalog.get("models")).values():
            for key, value in as_dict(entry).items():
                if key not in K.MODEL_FIELDS:
                    self.add("GetAvailableModels", f"model field {key}", value)

    def summaries(self, answer: dict[str, Any]) -> None:
        for summary in as_dict(answer.get("trajectorySummaries")).values():
            summary = as_dict(summary)
            self.unknown_paths("GetAllCascadeTrajectories", summary, K.SUMMARY_FIELDS)
            kind = as_str(summary.get("trajectoryType"))
            if kind and kind not in K.KNOWN_TRAJECTORY_TYPES:
                self.add("GetAllCascadeTrajectories", f"trajectoryType {kind}", kind)
            status = as_str(summary.get("status"))
            if status and status not in K.KNOWN_RUN_STATUSES:
                self.add("GetAllCascadeTrajectories", f"status {status}", status)

    def update(self, update: dict[str, Any]) -> None:
        shell = {k: v for k, v in update.items()}
        main = as_dict(shell.get("mainTrajectoryUpdate"))
        if "stepsUpdate" in main:
            shell["mainTrajectoryUpdate"] = {
                **main,
                "stepsUpdate": {k: None for k in as_dict(main["stepsUpdate"])},
            }
        self.unknown_paths("StreamAgentStateUpdates", shell, K.UPDATE_FIELDS)
        for raw in steps_from_update(update):
            self.step(raw)


def _at(value: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(value, list):
            value = value[0] if value else None
        name = part.replace("[]", "")
        value = value.get(name) if isinstance(value, dict) else None
        if part.endswith("[]") and isinstance(value, list):
            value = value[0] if value else None
    return value


async def diagnose(client: Any, cascade_id: str | None, version_text: str | None) -> dict[str, Any]:
    """The report (JSON-ready): endpoint, version, methods, cascade, drift. ``client``: agy's RPC
    client, as the composition root built it."""
    surface = await probe_surface(client, cascade_id)
    drift = Drift()
    if "GetAvailableModels" in surface.answers:
        drift.catalog(surface.answers["GetAvailableModels"])
    listing = surface.answers.get("GetAllCascadeTrajectories", {})
    if as_dict(listing.get("trajectorySummaries")):
        drift.summaries(listing)
    for raw in surface.steps:
        drift.step(raw)
    if surface.first_update is not None:
        drift.update(surface.first_update)
    return {
        "endpoint": client.base_url,
        "version": parse_version(version_text),
        "methods": surface.methods,
        "cascade": surface.cascade,
        "steps": len(surface.steps),
        "drift": [{"where": w, "what": x, "example": e} for (w, x), e in sorted(drift.seen.items())],
        "gates": gate_report(surface.steps, await asyncio.to_thread(_kind_tally)),
    }


def _kind_tally() -> dict[str, dict[str, int]]:
    """Per gate kind, the answers this agy took and refused (this install's decision ledger)."""
    from agy_harness.composition.root.audit_ledger import kind_tally

    return kind_tally()


def parse_version(text: str | None) -> dict[str, str] | None:
    """``agy --version``'s lines as fields: ``{"version": "1.0.10", "build": ..., ...}`` (its first
    line is the version, the others ``key: value``); None when agy did not say."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return None
    fields = {"version": lines[0].removeprefix("agy ").strip()}
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower().replace(" ", "_"), value.strip())
    return fields


def render(report: dict[str, Any]) -> str:
    lines = [f"agy-harness doctor: {report['endpoint']}"]
    version = report["version"] or {}
    shown = " · ".join(
        [version.get("version", ""), *(f"{k}: {v}" for k, v in version.items() if k == "build")]
    )
    lines.append(f"agy version: {shown.strip(' ·') or 'unknown (agy --version did not answer)'}")
    lines.append("methods:")
    lines += [f"  {state:<10} {name}" for name, state in report["methods"].items()]
    if report["cascade"]:
        lines.append(f"conversation: {report['cascade']} ({report['steps']} steps read)")
    drift = report["drift"]
    lines.append(f"drift: {len(drift)} thing(s) this project does not know" + (":" if drift else ""))
    lines += [f"  {d['where']}: {d['what']} (e.g. {d['example']})" for d in drift]
    lines += render_gates(report)
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> int:
    """The ``doctor`` command (its arguments: :mod:`.command`): this machine's checks, then
    agy's probe; exit 1 when no agy could be probed (everything else is still checked and shown)."""
    checks = await asyncio.to_thread(environment)
    container = make_container(port=args.port, cascade_id=args.cascade, version_text=args.agy_version)
    try:
        await bind_endpoint(container)  # discovery (the port is verified), and the bound agy's version
    except (AgyNotBound, AgyCallFailed) as exc:
        found = f"not found: {exc}; start agy (or `agy-harness sim`) and run doctor again"
        if isinstance(exc, AgyAmbiguous):
            found = f"more than one answers ({exc}); pick one with --port N"
        checks.append(Check("agy", False, found))
        _print(args, checks, None)
        return EXIT_FAILURE
    try:
        report = await diagnose(container.client(), args.cascade, container.config.version_text())
    finally:
        await container.client().aclose()
    if container.config.pid() is not None:
        report["pid"] = container.config.pid()
    version = (report["version"] or {}).get("version", "?")
    checks.append(Check("agy", True, f"{version} on {report['endpoint']}", version))
    _print(args, checks, report)
    return EXIT_OK


def _print(args: argparse.Namespace, checks: list[Check], report: dict[str, Any] | None) -> None:
    if args.json:
        out: dict[str, Any] = dict(report or {})
        out["environment"] = [c.as_json() for c in checks]
        out["agy_found"] = report is not None
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return
    text = "this machine:\n" + "\n".join(c.line() for c in checks)
    if report is not None:
        text += "\n" + render(report)
    say(text, sys.stdout)  # fitted to the terminal (a pipe gets whole lines)
