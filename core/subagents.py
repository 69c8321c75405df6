"""What a parent's step says about the sub-agents it started: each child's role and type. Pure.

Two shapes name a child (see docs/conventions.md):

* the typed ``invokeSubagent`` body: ``subagents[i] = {role, typeName, ...}`` paired positionally with
  ``results[i] = {conversationId, ...}`` (the reference's ``reader.py _subagent_pairs`` and
  ``_register_subagent_child``; a result without its id yet names nobody);
* a GENERIC sub-agent tool's result text holding ``{"role", "type", "conversationId"}`` objects (the
  recorded ``manage_subagents`` result lists agy's sub-agents so).

Only what the step names is read: a child no step names has no role or type (``""``).
"""

from __future__ import annotations

import json
from typing import NamedTuple

from .steps import Step, as_dict, as_list, as_str

SCAN_CHARS = 65536  # a result text is searched this far for named children
SCAN_OBJECTS = 256  # and at most this many objects are tried


class SubagentSpec(NamedTuple):
    role: str = ""
    agent_type: str = ""


def named_children(step: Step) -> dict[str, SubagentSpec]:
    """The child cascades ``step`` names, each with its role and type (see the module doc)."""
    named: dict[str, SubagentSpec] = {}
    body = as_dict(step.raw.get("invokeSubagent"))
    for spec, result in zip(as_list(body.get("subagents")), as_list(body.get("results")), strict=False):
        child = as_str(as_dict(result).get("conversationId"))
        if child and isinstance(spec, dict):
            named.setdefault(child, SubagentSpec(as_str(spec.get("role")), as_str(spec.get("typeName"))))
    result = as_dict(as_dict(step.raw.get("generic")).get("result")).get("result")
    if isinstance(result, str):
        for found in _objects(result[:SCAN_CHARS]):
            child = as_str(found.get("conversationId"))
            if child:
                named.setdefault(child, SubagentSpec(as_str(found.get("role")), as_str(found.get("type"))))
    return named


def _objects(text: str) -> list[dict[str, object]]:
    """The JSON objects that start at a ``{"`` in ``text``, outermost first (bounded)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, object]] = []
    at = text.find('{"')
    tries = 0
    while at >= 0 and tries < SCAN_OBJECTS:
        tries += 1
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            value, end = None, at + 1
        if isinstance(value, dict):
            found.append(value)
        at = text.find('{"', end)
    return found
