"""agy's 18 gate kinds as a table (see :mod:`.kinds` for the evidence and its levels). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GateKindName = Literal["question", "permission", "other"]
Evidence = Literal["recorded", "descriptors", "none"]

IDE = "jkfujinami/antigravity-client resource/temp_extracted/exa/cortex_pb/cortex.proto"
RESEARCH = "FarrelAD/ag-attention-bridge docs/ANTIGRAVITY_NATIVE_INTERACTION_RESEARCH.md"
FIELD_MAP = "sdougbrown/avenor internal/runtime/agy/testdata/rpc/v1.1.5/FIELD_MAP.md"


@dataclass(frozen=True, slots=True)
class Kind:
    number: int  # the CascadeUserInteraction oneof field number
    proto: str  # the proto field name
    field: str  # agy's JSON field name (lowerCamel), in requestedInteraction and in the answer
    asks: str  # what agy asks, in words ("open {what} in a browser"); {what}: the request's subject
    gate: GateKindName  # question / permission: answerable here; other: a named card
    evidence: Evidence  # the level of what shows the answer message
    source: str  # where
    answer: str  # the answer message's fields ("" where none is evidenced)
    allow: str = ""  # the allow's shape ("" : none offered)
    deny: str = ""  # the deny's shape ("" : none evidenced: no deny is offered)
    allow_label: str = ""  # the one-time allow's button ("" : "Allow once")
    deny_label: str = ""  # the deny's button ("" : "Deny")
    needs_subject: bool = True  # no allow unless the card names what agy would act on


def _k(number: int, proto: str, asks: str, gate: GateKindName, evidence: Evidence, source: str,
       answer: str = "", allow: str = "", deny: str = "", allow_label: str = "", deny_label: str = "",
       needs_subject: bool = True) -> Kind:  # fmt: skip
    head, *rest = proto.split("_")
    field = head + "".join(p.capitalize() for p in rest)
    return Kind(number, proto, field, asks, gate, evidence, source, answer, allow, deny,
                allow_label, deny_label, needs_subject)  # fmt: skip


_CONFIRM = "confirm"
_YES, _NO = "{confirm: true}", "{confirm: false}"


def _confirm(number: int, proto: str, message: str, asks: str, *, needs_subject: bool = True,
             note: str = "", allow_label: str = "") -> Kind:  # fmt: skip
    source = f"{IDE}: {message} {{bool confirm = 1}}{note}"
    return _k(number, proto, asks, "permission", "descriptors", source, _CONFIRM, _YES, _NO,
              allow_label=allow_label, needs_subject=needs_subject)  # fmt: skip


# fmt: off
KINDS: tuple[Kind, ...] = (
    _k(4, "deploy", "deploy {what}", "permission", "descriptors",
       f"{IDE}: CascadeDeployInteraction {{bool cancel = 1; DeployTarget deploy_target = 2; "
       f"string subdomain = 3}}; deploy = 4, cancel = 1 also in agy 1.1.5's descriptors ({FIELD_MAP})",
       "cancel, deployTarget, subdomain", "{cancel: false, deployTarget: the one target offered}",
       "{cancel: true}", "Deploy", "Cancel the deploy", needs_subject=False),
    _k(5, "run_command", "run {what}", "permission", "descriptors",
       f"{IDE}: CascadeRunCommandInteraction {{confirm = 1; proposed_command_line = 2; "
       f"submitted_command_line = 3; sandbox_override = 4}}; {RESEARCH} §14",
       "confirm, proposedCommandLine, submittedCommandLine, sandboxOverride",
       "{confirm: true, proposedCommandLine, submittedCommandLine}",
       "{confirm: false, proposedCommandLine}"),
    _confirm(6, "open_browser_url", "CascadeOpenBrowserUrlInteraction", "open {what} in a browser"),
    _confirm(7, "run_extension_code", "CascadeRunExtensionCodeInteraction", "run extension code: {what}"),
    _confirm(8, "execute_browser_javascript", "CascadeExecuteBrowserJavaScriptInteraction",
             "run JavaScript in the browser: {what}"),
    _confirm(9, "capture_browser_screenshot", "CascadeCaptureBrowserScreenshotInteraction",
             "capture a browser screenshot: {what}"),
    _confirm(10, "click_browser_pixel", "CascadeClickBrowserPixelInteraction", "click in the browser: {what}"),
    _confirm(13, "browser_action", "CascadeBrowserActionInteraction", "act in the browser: {what}"),
    _confirm(14, "open_browser_setup", "CascadeOpenBrowserSetupInteraction", "open the browser setup",
             needs_subject=False),
    _confirm(15, "confirm_browser_setup", "CascadeConfirmBrowserSetupInteraction", "confirm the browser setup",
             needs_subject=False),
    _confirm(16, "send_command_input", "CascadeSendCommandInputInteraction",
             "send input to a running command: {what}"),
    _confirm(17, "read_url_content", "CascadeReadUrlContentInteraction", "read {what}"),
    _confirm(18, "mcp", "CascadeMcpInteraction", "use the MCP tool {what}"),
    _k(19, "file_permission", "access {what}", "permission", "descriptors",
       f"{IDE}: FilePermissionInteraction {{bool allow = 1; PermissionScope scope = 2; "
       f"string absolute_path_uri = 3}}; request FilePermissionInteractionSpec {{absolute_path_uri, "
       f"is_directory, block_reason}} (also {FIELD_MAP})",
       "allow, scope, absolutePathUri", "{allow: true, scope, absolutePathUri: the path asked}",
       "{allow: false, absolutePathUri: the path asked}"),
    _k(20, "elicitation", "answer a request for input: {what}", "permission", "descriptors",
       f"{IDE}: ElicitationInteraction {{string action = 1; string content_json = 2}}; request "
       "ElicitationInteractionSpec {server_name, mode, message, requested_schema_json, url}",
       "action, contentJson", "{action: accept, contentJson: what the human gave}",
       "{action: decline} (or {action: cancel})", "Accept", "Decline", needs_subject=False),
    _k(21, "permission", "{what}", "permission", "recorded",
       f"adapters/simulator/shapes/run_command_done.json; scope: {RESEARCH} §12; PermissionInteraction in {IDE}",
       "allow, scope, userDenyInstruction", "{allow: true[, scope]}",
       "{allow: false[, userDenyInstruction]}"),
    _k(22, "ask_question", "answer {what}", "question", "recorded",
       f"adapters/simulator/shapes/ask_question_done.json; {RESEARCH} §8.2",
       "responses, cancelled", "{responses: [...]}", "{responses: []} (skipped)"),
    _confirm(23, "approval_interaction", "ApprovalInteraction", "approve {what}",
             note=" (the IDE's build only; its request spec is empty)"),
)
# fmt: on

BY_FIELD: dict[str, Kind] = {k.field: k for k in KINDS}
#: the settings gates agy raises beyond its tool-permission setting (omnigent-ai/omnigent#8100): not
#: CascadeUserInteraction kinds but fields a WAITING step may name; named cards, never answered here
#: (their answer is not evidenced). The setting's name stays in logs and JSON; the card says it in words.
SETTING_GATES: dict[str, str] = {
    "artifactReviewPolicy": "review an artifact (one of agy's review settings asks for it)",
    "allowNonWorkspaceAccess": "reach outside the workspace (one of agy's access settings asks for it)",
}
TERMINAL = "answer in agy's terminal"


def gate_kind(field: str) -> GateKindName:
    """The gate kind the harness makes of agy's interaction ``field`` (an unknown field: ``other``)."""
    kind = BY_FIELD.get(field)
    return kind.gate if kind is not None else "other"


def answerable_fields() -> tuple[str, ...]:
    return tuple(k.field for k in KINDS if k.gate != "other")


def evidence_of(field: str) -> Evidence:
    kind = BY_FIELD.get(field)
    return kind.evidence if kind is not None else "none"


#: each kind in words, for summaries (its card names the subject itself)
_WORDS = {
    "deploy": "deploy",
    "runCommand": "run a command",
    "openBrowserUrl": "open a page in a browser",
    "readUrlContent": "read a web page",
    "mcp": "use an MCP tool",
    "filePermission": "access a file or folder",
    "elicitation": "answer an MCP server's request for input",
    "permission": "allow a tool",
    "askQuestion": "answer a question",
    "approvalInteraction": "approve",
}


def in_words(field: str) -> str:
    """What a gate of ``field`` asks, in words without its subject ("open a page in a browser"), for
    summaries (doctor, record); the field itself only in logs and JSON."""
    kind = BY_FIELD.get(field)
    if kind is None:
        return SETTING_GATES.get(field, "something this harness does not know").split(" (")[0]
    return _WORDS.get(field) or " ".join(kind.asks.replace(": {what}", "").replace("{what}", "").split())
