"""agy's 18 gate kinds, by name: what each asks, what a human must see, each kind's answer message --
its allow and its deny, their source and the level of that evidence -- and whether anything here
answers it. Pure.

agy's language server defines ``CascadeUserInteraction`` with a oneof of 18 interactions (deploy=4 ...
approval_interaction=23). A WAITING step names the one it waits for in ``requestedInteraction`` under
the same JSON field name (lowerCamel of the proto name); the answer (``HandleCascadeUserInteraction``)
carries the interaction under that field too.

The evidence, and its level (:data:`Evidence`):

* ``recorded``: agy's CLI recorded the answer (``adapters/simulator/shapes``): ``permission``
  ``{allow: true}`` (``run_command_done.json``) and ``askQuestion`` (``ask_question_done.json``);
* ``descriptors``: the answer message as the Antigravity IDE's embedded descriptors give it, rebuilt
  by jkfujinami/antigravity-client ``resource/temp_extracted/exa/cortex_pb/cortex.proto`` (:data:`IDE`);
  the oneof's numbers and fields 4..19 agree with that repository's older
  ``antigravity-client/src/proto_generated/exa/cortex_pb.proto`` and with FarrelAD/ag-attention-bridge
  ``docs/ANTIGRAVITY_NATIVE_INTERACTION_RESEARCH.md`` §8.1, and ``deploy = 4`` / ``deploy.cancel = 1``
  with agy 1.1.5's own descriptors (sdougbrown/avenor ``.../v1.1.5/FIELD_MAP.md``). The IDE's build is
  not agy's CLI: each claim is checkable on a live agy (``agy-harness doctor`` / ``record`` count what
  this agy took and refused, from the decision ledger);
* ``none``: no public source shows the answer (an unknown field; the two setting gates).

The answer messages (IDE descriptors, field numbers in brackets):

* ``{confirm [1]}``: openBrowserUrl, runExtensionCode, executeBrowserJavascript,
  captureBrowserScreenshot, clickBrowserPixel, browserAction, openBrowserSetup, confirmBrowserSetup,
  sendCommandInput, readUrlContent, mcp and approvalInteraction (``ApprovalInteraction``: in the IDE's
  build only; its request spec is empty). Allow ``{confirm: true}``, deny ``{confirm: false}``. Their
  request specs are empty messages: what agy would do is the step's own body (``openBrowserUrl.url``,
  ``executeBrowserJavaScript.javascriptSource``, ``mcpTool.serverName`` / ``toolCall``,
  ``sendCommandInput.input`` ...: :mod:`.kind_subjects`), and nothing is allowed whose subject the card
  cannot show;
* runCommand ``{confirm [1], proposedCommandLine [2], submittedCommandLine [3], sandboxOverride [4]}``
  (``sandboxOverride`` is sent only when the human chose it; a step asking for it says so on its card);
* filePermission ``{allow [1], scope [2], absolutePathUri [3]}``: the path is the request's
  (``FilePermissionInteractionSpec {absolutePathUri, isDirectory, blockReason: OUTSIDE_WORKSPACE |
  GITIGNORED}``);
* deploy ``{cancel [1], deployTarget [2], subdomain [3]}``: **the deny is ``cancel: true``; an empty
  ``deploy {}`` proceeds** (a deny is never built as an empty or default message). The public
  avenor probe sent exactly that empty message as its "denial" -- which the descriptor reads as go;
* elicitation ``{action [1]: accept | decline | cancel, contentJson [2]}`` (MCP elicitation; its request
  ``{serverName, mode, message, requestedSchemaJson, url}``): accept only with content the human gave,
  or when the requested schema asks for nothing; decline is the deny, cancel the dismissal;
* permission ``{allow, scope, userDenyInstruction}`` (recorded; scope and the reason from public clients);
* askQuestion ``{responses[{question, selectedOptionIds, writeInResponse, skipped}], cancelled}`` (recorded).

:data:`KINDS` holds each kind with the gate kind the harness makes of it (``question`` /
``permission``: answered through the one allow/deny flow of every surface; ``other``: a named card),
its allow and deny in words and shape, and the button labels. Nothing answers a field not in the table.
"""

from __future__ import annotations

from .kind_cards import Reading, describe, read_request, subject
from .kind_table import (
    BY_FIELD,
    FIELD_MAP,
    IDE,
    KINDS,
    RESEARCH,
    SETTING_GATES,
    TERMINAL,
    Evidence,
    GateKindName,
    Kind,
    answerable_fields,
    evidence_of,
    gate_kind,
    in_words,
)

__all__ = [
    "BY_FIELD",
    "FIELD_MAP",
    "IDE",
    "KINDS",
    "RESEARCH",
    "SETTING_GATES",
    "TERMINAL",
    "Evidence",
    "GateKindName",
    "Kind",
    "Reading",
    "answerable_fields",
    "describe",
    "evidence_of",
    "gate_kind",
    "in_words",
    "read_request",
    "subject",
]
