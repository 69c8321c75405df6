"""The simulator asks every kind of gate agy's language server defines (``kind: <field> [subject]``
in a user turn; the ``kinds`` scenario asks them all): the 18 ``CascadeUserInteraction`` fields and
the two settings gates (omnigent-ai/omnigent#8100).

What each request holds: ``permission`` and ``askQuestion`` are agy's recorded shapes (the ``run`` and
``ask`` actions); ``filePermission`` is ``FilePermissionInteractionSpec {absolutePathUri, isDirectory,
blockReason}`` (descriptors; also nested in a LIST_DIRECTORY step as ``listDirectory.
filePermissionRequest``: ``kind: nestedFilePermission``); ``runCommand`` is a RUN_COMMAND step whose
``requestedInteraction`` is ``{"runCommand": {}}`` (the request message's fields are not public: the
step's ``runCommand.proposedCommandLine`` carries the command). Every other request is a GUESS made
of the subject the harness must show (a URL, a server and tool...): no source shows those messages.
"""

from __future__ import annotations

from typing import Any

#: field -> (the tool agy would call, the request's subject key, the default subject)
KIND_TOOLS: dict[str, tuple[str, str, str]] = {
    "deploy": ("deploy_web_app", "name", "my-site"),
    "runCommand": ("run_command", "", "ls -la"),
    "openBrowserUrl": ("open_browser_url", "url", "https://example.com/"),
    "runExtensionCode": ("run_extension_code", "code", "vscode.window.showInformationMessage('hi')"),
    "executeBrowserJavascript": ("execute_browser_javascript", "code", "document.title"),
    "captureBrowserScreenshot": ("capture_browser_screenshot", "url", "https://example.com/"),
    "clickBrowserPixel": ("click_browser_pixel", "description", "x=120 y=48"),
    "browserAction": ("browser_action", "description", "scroll down"),
    "openBrowserSetup": ("open_browser_setup", "description", "browser setup"),
    "confirmBrowserSetup": ("confirm_browser_setup", "description", "browser setup"),
    "sendCommandInput": ("send_command_input", "input", "y"),
    "readUrlContent": ("read_url_content", "url", "https://example.com/docs"),
    "mcp": ("mcp_tool", "toolName", "create_issue"),
    "filePermission": ("list_dir", "absolutePathUri", "file:///etc"),
    "nestedFilePermission": ("list_dir", "absolutePathUri", "file:///etc"),
    "elicitation": ("elicitation", "message", "Which account?"),
    "approvalInteraction": ("approval", "description", "the implementation plan"),
    "artifactReviewPolicy": ("write_to_file", "targetFileUri", "file:///brain/plan.md"),
    "allowNonWorkspaceAccess": ("view_file", "absolutePathUri", "file:///etc/hosts"),
}
#: what the ``kinds`` scenario asks, one turn each (permission and askQuestion through run / ask)
KINDS_SCENARIO: list[str] = [
    "run: ls -la",
    "ask: which part should we work on first?",
    *(f"kind: {name}" for name in KIND_TOOLS),
]


def kind_request(field: str, subject: str) -> dict[str, Any]:
    """The request agy's step would carry for ``field`` about ``subject`` (module doc)."""
    _tool, key, default = KIND_TOOLS[field]
    value = subject or default
    if field in ("filePermission", "nestedFilePermission"):
        return {
            "absolutePathUri": value,
            "isDirectory": True,
            "blockReason": "BLOCK_REASON_OUTSIDE_WORKSPACE",
        }
    if field == "runCommand":
        return {}
    if field == "mcp":
        return {"serverName": "github", "toolName": value}
    return {key: value}
