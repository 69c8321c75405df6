"""The unary connect-JSON methods, over real TLS HTTP/2."""

from __future__ import annotations

import httpx

from agy_harness.adapters.simulator import MODELS, Simulator

from .helpers import JSON_HEADERS, call, client, interaction, ok, short, url, waiting_index


async def test_heartbeat_over_http2_and_http11(sim: Simulator) -> None:
    async with client() as c:
        assert await ok(c, sim, "Heartbeat") == {}
    async with client(http2=False) as c:
        resp = await c.post(url(sim, "Heartbeat"), json={}, headers=JSON_HEADERS)
        assert resp.http_version == "HTTP/1.1"
        assert resp.status_code == 200 and resp.json() == {}
    assert sim.base_url == f"https://127.0.0.1:{sim.port}"


async def test_unknown_method_is_404(sim: Simulator) -> None:
    async with client() as c:
        resp = await call(c, sim, "NoSuchMethod")
        assert resp.status_code == 404
        resp = await c.post(f"{sim.base_url}/other.Service/Heartbeat", json={}, headers=JSON_HEADERS)
        assert resp.status_code == 404


async def test_the_plain_listener_answers_404_to_everything(sim: Simulator) -> None:
    assert sim.plain_port != sim.port
    async with httpx.AsyncClient() as c:
        for path in ("/", "/exa.language_server_pb.LanguageServerService/Heartbeat"):
            resp = await c.post(f"http://127.0.0.1:{sim.plain_port}{path}", json={}, headers=JSON_HEADERS)
            assert resp.status_code == 404
        # and the TLS port does not speak plain HTTP
        try:
            resp = await c.post(f"http://127.0.0.1:{sim.port}/", json={})
            assert resp.status_code >= 400
        except httpx.HTTPError:
            pass


async def test_bad_json_is_invalid_argument(sim: Simulator) -> None:
    async with client() as c:
        for body in (b"{not json", b"[1, 2]"):
            resp = await call(c, sim, "GetCascadeTrajectorySteps", body)
            assert resp.status_code == 400
            assert resp.json()["code"] == "invalid_argument"


async def test_get_conversation_metadata(sim: Simulator) -> None:
    async with client() as c:
        got = await ok(c, sim, "GetConversationMetadata", {"conversationId": sim.cascade_id})
        assert got == {"metadata": {"rootConversationId": sim.cascade_id}}
        resp = await call(c, sim, "GetConversationMetadata", {"conversationId": "nope"})
        assert resp.status_code == 500
        assert resp.json()["message"] == "trajectory not found"


async def test_get_steps_and_send_user_message(sim: Simulator) -> None:
    async with client() as c:
        assert await ok(c, sim, "GetCascadeTrajectorySteps", {"cascadeId": sim.cascade_id}) == {"steps": []}
        body = {
            "cascadeId": sim.cascade_id,
            "items": [{"text": "Say hello in one short sentence."}],
            "cascadeConfig": {"plannerConfig": {"planModel": "MODEL_PLACEHOLDER_M71"}},
            "someFutureField": 1,
        }
        assert await ok(c, sim, "SendUserCascadeMessage", body) == {}
        await sim.wait_idle()
        steps = (await ok(c, sim, "GetCascadeTrajectorySteps", {"cascadeId": sim.cascade_id}))["steps"]
    assert [short(s) for s in steps] == [
        "USER_INPUT",
        "CONVERSATION_HISTORY",
        "PLANNER_RESPONSE",
        "CHECKPOINT",
    ]
    assert steps == sim.steps()
    user = steps[0]["userInput"]
    assert user["userResponse"] == "Say hello in one short sentence."
    assert user["userConfig"]["plannerConfig"]["planModel"] == "MODEL_PLACEHOLDER_M71"
    assert steps[2]["metadata"]["generatorModel"] == "MODEL_PLACEHOLDER_M71"
    assert steps[2]["plannerResponse"]["response"].startswith("Hello!")


async def test_send_user_message_refusals(sim: Simulator) -> None:
    async with client() as c:
        resp = await call(c, sim, "SendUserCascadeMessage", {})  # the version-gate probe: no side effect
        assert resp.status_code == 500
        resp = await call(c, sim, "SendUserCascadeMessage", {"cascadeId": sim.cascade_id, "items": []})
        assert resp.status_code == 400
    assert sim.steps() == []


async def test_start_cascade_and_all_trajectories(sim: Simulator) -> None:
    async with client() as c:
        new = (await ok(c, sim, "StartCascade"))["cascadeId"]
        assert new != sim.cascade_id
        summaries = (await ok(c, sim, "GetAllCascadeTrajectories"))["trajectorySummaries"]
    assert set(summaries) == {sim.cascade_id, new}
    s = summaries[new]
    assert s["stepCount"] == 0 and s["status"] == "CASCADE_RUN_STATUS_IDLE"
    assert "lastUserInputTime" not in s and s["lastModifiedTime"]
    assert s["trajectoryMetadata"] == {"rootConversationId": new}
    assert s["trajectoryType"] == "CORTEX_TRAJECTORY_TYPE_CASCADE"


async def test_available_models(sim: Simulator) -> None:
    async with client() as c:
        got = await ok(c, sim, "GetAvailableModels")
    models = got["response"]["models"]
    assert models == MODELS
    # the reference's shape: displayName/recommended/supportsThinking/thinkingBudget + defaultAgentModelId
    assert [k for k, m in models.items() if m["recommended"]] == [sim.model]
    assert got["response"]["defaultAgentModelId"] == sim.model
    assert next(iter(models)) != sim.model  # "the first model" is not the default
    for k, m in models.items():
        assert k == m["model"] and m["displayName"]
        assert isinstance(m["supportsThinking"], bool) and isinstance(m["thinkingBudget"], int)


async def test_send_agent_message_records_a_system_message_not_a_turn(sim: Simulator) -> None:
    async with client() as c:
        await ok(c, sim, "SendAgentMessage", {"cascadeId": sim.cascade_id, "message": "note from the agent"})
    steps = sim.steps()
    assert [short(s) for s in steps] == ["SYSTEM_MESSAGE"]
    assert steps[0]["systemMessage"] == {"message": "note from the agent"}
    assert not sim.is_running()


async def test_reactive_updates_are_deprecated(sim: Simulator) -> None:
    async with client() as c:
        resp = await call(c, sim, "StreamCascadeReactiveUpdates", {"conversationId": sim.cascade_id})
    assert resp.status_code == 500
    assert resp.json()["message"] == "reactive state is deprecated"


async def test_handle_interaction_refusals_say_input_not_registered(sim: Simulator) -> None:
    await sim.submit_user_turn("run: pwd")
    await sim.wait_idle()
    i = waiting_index(sim)
    good = interaction(sim, i, permission={"allow": True})
    trajectory = good["interaction"]["trajectoryId"]
    async with client() as c:
        # trajectoryId outside `interaction` is an unknown top-level field: dropped
        misplaced = {
            "cascadeId": sim.cascade_id,
            "trajectoryId": trajectory,
            "interaction": {"stepIndex": i, "permission": {"allow": True}},
        }
        wrong_step = {
            "cascadeId": sim.cascade_id,
            "interaction": {"trajectoryId": trajectory, "stepIndex": i - 1, "permission": {"allow": True}},
        }
        wrong_kind = interaction(sim, i, askQuestion={"responses": [{"selectedOptionIds": ["1"]}]})
        for body, n in ((misplaced, i), (wrong_step, i - 1), (wrong_kind, i)):
            resp = await call(c, sim, "HandleCascadeUserInteraction", body)
            assert resp.status_code == 500
            assert resp.json()["message"] == f"input not registered for step {n}"
        assert sim.steps()[i]["status"] == "CORTEX_STEP_STATUS_WAITING"
        await ok(c, sim, "HandleCascadeUserInteraction", good)
        await sim.wait_idle()
        # the step is no longer WAITING: answering again is refused the same way
        resp = await call(c, sim, "HandleCascadeUserInteraction", good)
        assert resp.status_code == 500
        assert resp.json()["message"] == f"input not registered for step {i}"
    assert sim.steps()[i]["status"] == "CORTEX_STEP_STATUS_DONE"


async def test_cancel_unknown_cascade(sim: Simulator) -> None:
    async with client() as c:
        assert await ok(c, sim, "CancelCascadeSteps", {"cascadeId": sim.cascade_id}) == {}
        resp = await call(c, sim, "CancelCascadeSteps", {"cascadeId": "nope"})
        assert resp.status_code == 500
