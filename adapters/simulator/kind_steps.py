"""The simulator asks every kind of gate agy's language server defines (``kind: <field> [subject]``
in a user turn; the ``kinds`` scenario asks them all): the 18 ``CascadeUserInteraction`` fields and
the two settings gates (omnigent-ai/omnigent#8100), in the shapes the IDE's descriptors give
(jkfujinami/antigravity-client ``resource/temp_extracted/exa/cortex_pb/cortex.proto``; see
:mod:`agy_harness.core.kinds`).

What each request holds: ``permission`` and ``askQuestion`` are agy's recorded shapes (the ``run`` and
``ask`` actions). The ``{confirm}`` kinds' request specs are empty messages: what agy would do is the
step's typed body (``openBrowserUrl {url}``, ``executeBrowserJavascript {javascriptSource, ...}``,
``mcpTool {serverName, toolCall}``, ``sendCommandInput {commandId, input}``, ``browserInput {text}``...:
the descriptors' ``CortexStep*`` messages). ``filePermission`` is ``FilePermissionInteractionSpec
{absolutePathUri, isDirectory, blockReason}`` (also nested in a LIST_DIRECTORY step as
``listDirectory.filePermissionRequest``: ``kind: nestedFilePermission``); ``elicitation`` is
``ElicitationInteractionSpec {serverName, mode, message, requestedSchemaJson}`` asking for one required
field (``kind: plainElicitation``: a schema that asks for nothing); ``deploy`` is
``CascadeDeployInteractionSpec {deployTargetOptions}`` with one option whose fields are a GUESS
(``DeployTarget``'s are not public); ``runCommand`` is a RUN_COMMAND step whose ``requestedInteraction``
is ``{"runCommand": {}}``. The two settings gates' requests are GUESSES (no source shows them).
"""

from __future__ import annotations

import json
from typing import Any

#: field -> (the tool agy would call, the request's subject key, the default subject)
KIND_TOOLS: dict[str, tuple[str, str, str]] = {
    "deploy": ("deploy_web_app", "name", "my-site"),
    "runCommand": ("run_command", "", "ls -la"),
    "openBrowserUrl": ("open_browser_url", "url", "https://example.com/"),
    "runExtensionCode": ("run_extension_code", "code", "vscode.window.showInformationMessage('hi')"),
    "executeBrowserJavascript": ("execute_browser_javascript", "javascriptSource", "document.title"),
    "captureBrowserScreenshot": ("capture_browser_screenshot", "screenshotName", "example-home"),
    "clickBrowserPixel": ("click_browser_pixel", "pageId", "page-1"),
    "browserAction": ("browser_input", "text", "hello"),
    "openBrowserSetup": ("open_browser_setup", "", "browser setup"),
    "confirmBrowserSetup": ("confirm_browser_setup", "", "browser setup"),
    "sendCommandInput": ("send_command_input", "input", "y"),
    "readUrlContent": ("read_url_content", "url", "https://example.com/docs"),
    "mcp": ("mcp_tool", "toolName", "create_issue"),
    "filePermission": ("list_dir", "absolutePathUri", "file:///etc"),
    "nestedFilePermission": ("list_dir", "absolutePathUri", "file:///etc"),
    "elicitation": ("elicitation", "message", "Which account?"),
    "plainElicitation": ("elicitation", "message", "Go on?"),
    "approvalInteraction": ("approval", "", "the implementation plan"),
    "artifactReviewPolicy": ("write_to_file", "targetFileUri", "file:///brain/plan.md"),
    "allowNonWorkspaceAccess": ("view_file", "absolutePathUri", "file:///etc/hosts"),
}
#: what the ``kinds`` scenario asks, one turn each (permission and askQuestion through run / ask)
KINDS_SCENARIO: list[str] = [
    "run: ls -la",
    "ask: which part should we work on first?",
    *(f"kind: {name}" for name in KIND_TOOLS),
]
#: the field agy's answer carries for a pseudo-kind of the simulator's
FIELD_OF = {"nestedFilePermission": "filePermission", "plainElicitation": "elicitation"}
ELICITED_SCHEMA = {
    "type": "object",
    "properties": {"account": {"type": "string", "description": "the account to use"}},
    "required": ["account"],
}


def kind_request(field: str, subject: str) -> dict[str, Any]:
    """The request (``requestedInteraction`` value) agy's step carries for ``field`` about ``subject``."""
    _tool, key, default = KIND_TOOLS[field]
    value = subject or default
    if field in ("filePermission", "nestedFilePermission"):
        return {
            "absolutePathUri": value,
            "isDirectory": True,
            "blockReason": "BLOCK_REASON_OUTSIDE_WORKSPACE",
        }
    if field in ("elicitation", "plainElicitation"):
        schema = ELICITED_SCHEMA if field == "elicitation" else {"type": "object", "properties": {}}
        return {
            "serverName": "github",
            "mode": "form",
            "message": value,
            "requestedSchemaJson": json.dumps(schema, sort_keys=True),
        }
    if field == "deploy":
        return {"deployTargetOptions": [{"name": value}]}
    if field in ("artifactReviewPolicy", "allowNonWorkspaceAccess"):
        return {key: value}
    return {}  # the descriptors' empty request specs: the step's body says what agy would do


def kind_body(field: str, subject: str) -> tuple[str, str, dict[str, Any]] | None:
    """``(step type, body key, body)`` of the step that asks ``field`` about ``subject`` (descriptors'
    ``CortexStep*`` messages); None for a kind whose step is the simulator's GENERIC one."""
    _tool, _key, default = KIND_TOOLS[field]
    value = subject or default
    bodies: dict[str, tuple[str, str, dict[str, Any]]] = {
        "openBrowserUrl": ("OPEN_BROWSER_URL", "openBrowserUrl", {"url": value}),
        "runExtensionCode": (
            "RUN_EXTENSION_CODE",
            "runExtensionCode",
            {"code": value, "language": "javascript", "userFacingExplanation": "Show a greeting"},
        ),
        "executeBrowserJavascript": (
            "EXECUTE_BROWSER_JAVASCRIPT",
            "executeBrowserJavascript",
            {"pageId": "page-1", "javascriptSource": value, "javascriptDescription": "Read the page title"},
        ),
        "captureBrowserScreenshot": (
            "CAPTURE_BROWSER_SCREENSHOT",
            "captureBrowserScreenshot",
            {"pageId": "page-1", "screenshotName": value},
        ),
        "clickBrowserPixel": (
            "CLICK_BROWSER_PIXEL",
            "clickBrowserPixel",
            {"pageId": value, "x": 120, "y": 48},
        ),
        "browserAction": ("BROWSER_INPUT", "browserInput", {"pageId": "page-1", "index": 3, "text": value}),
        "sendCommandInput": (
            "SEND_COMMAND_INPUT",
            "sendCommandInput",
            {"commandId": "cmd-1", "input": value},
        ),
        "readUrlContent": ("READ_URL_CONTENT", "readUrlContent", {"url": value}),
        "mcp": (
            "MCP_TOOL",
            "mcpTool",
            {
                "serverName": "github",
                "toolCall": {"id": "call-mcp", "name": value, "argumentsJson": '{"title": "Bug"}'},
            },
        ),
    }
    return bodies.get(field)
