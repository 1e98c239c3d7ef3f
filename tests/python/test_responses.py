"""The Responses API (`/v1/responses`, issue 22) through the real binary and the official SDK:
plain and streamed responses (raw events and the `responses.stream` helper), function tools
answered with `function_call_output` on a `previous_response_id` chain, structured output
(`text.format`, `responses.parse`), retrieve / input_items (pagination) / delete, continuations
sent the moment an answer (or `response.completed`) arrives, team scoping, `store: false`, bad
bodies, the guardrail over input, instructions, tool outputs and the model's answer, the journal,
usage, budgets and limits, roles, abandoned streams, an upstream that breaks mid-stream
(`response.failed`) and a length cut (`incomplete`).

One gateway for the module, with the PII guardrail (cards blocked, the rest redacted) and the
journal on, in front of the session's simulated fleet. `llama-3.2-3b-instruct` and
`qwen2.5-coder-32b` answer in English: "Hello! I am <model>, served from region <r>. You asked:
"<last user text>"." (after a tool's result, they echo it).

Legacy `/v1/completions` (plain and streamed) is covered by test_completions.py."""

from __future__ import annotations

import json
import time
from typing import Literal

import httpx
import openai
import pytest
from pydantic import BaseModel

import harness

EN = "llama-3.2-3b-instruct"  # sa-riyadh-1
CODER = "qwen2.5-coder-32b"  # eu-frankfurt-1
REGION = harness.REGION
SETTINGS = json.dumps({"default": "redact", "entities": {"credit_card": "block"}})
CARD = "4111 1111 1111 1111"
ERROR_KEYS = {"message", "type", "param", "code"}
WEATHER = {"type": "function", "name": "get_weather", "description": "Current weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}


answer = harness.english_answer


@pytest.fixture(scope="module")
def gateway(sim, keys, tmp_path_factory):
    """Overrides conftest's: the module's one gateway, guarded and journaled (so `client` and
    `http` talk to it)."""
    config = harness.gateway_config(
        harness.fleet_models(sim.url, first_byte_timeout_ms=2000, stream_idle_timeout_ms=2000),
        keys["config"],
        server={"header_read_timeout_ms": 1000, "body_read_timeout_ms": 2000, "max_body_bytes": 1048576},
        extra=harness.UNLIMITED + f"\n[guardrail]\nsettings = {json.dumps(SETTINGS)}\n",
        journal={"enabled": True},
    )
    p = harness.start_gateway(config, tmp_path_factory.mktemp("responses-gw"))
    yield p
    p.kill()


@pytest.fixture(scope="module")
def admin(gateway, keys):
    with httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {keys['admin']}"},
                      timeout=20) as a:
        yield a


def new_team_key(admin: httpx.Client, **team_fields) -> dict:
    """A team (enterprise plan: no request-rate limits) and a member key of it, via the admin API."""
    r = admin.post("/v1/admin/teams", json={"name": "responses-test", "plan": "enterprise", **team_fields})
    assert r.status_code == 201, r.text
    team = r.json()
    r = admin.post("/v1/admin/keys", json={"team_id": team["id"], "role": "member"})
    assert r.status_code == 201, r.text
    return {"team": team, "key": r.json()}


def sdk(gateway, secret: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=secret, max_retries=0, timeout=20)


@pytest.fixture(scope="module")
def other(gateway, admin):
    """A client of another team (created through the admin API)."""
    return sdk(gateway, new_team_key(admin)["key"]["key"])


def upstream(sim) -> dict:
    """The body of the last request the fleet received."""
    return harness.sim_requests(sim)[-1]["body"]


def roles_and_texts(messages: list[dict]) -> list[tuple[str, str | None]]:
    return [(m["role"], m.get("content")) for m in messages]


def upstream_calls(sim) -> int:
    return harness.sim_stats(sim)["requests"]


def input_items(http, response_id: str, **params) -> dict:
    r = http.get(f"/v1/responses/{response_id}/input_items", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def assert_error(r: httpx.Response, status: int, param: str | None = None, code: str | None = None) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == ERROR_KEYS, body
    if param is not None:
        assert body["error"]["param"] == param, body
    if code is not None:
        assert body["error"]["code"] == code, body
    return body["error"]


def journal_entry(admin: httpx.Client, request_id: str) -> dict:
    def found():
        r = admin.post("/v1/activity/logs", json={"request_id": request_id})
        assert r.status_code == 200, r.text
        return r.json()["data"]
    entries = harness.wait_for(found, what=f"the journal entry of {request_id}")
    assert len(entries) == 1, entries
    return entries[0]


# --- A response, plain and streamed -------------------------------------------------------------


def test_a_response_is_answered_shaped_labelled_and_translated_to_chat(client, sim):
    raw = client.responses.with_raw_response.create(
        model=EN, input="What is the capital of France?", instructions="Answer briefly.",
        temperature=0.3, top_p=0.9, max_output_tokens=200, metadata={"ticket": "T-1"}, user="alice")
    r = raw.parse()
    assert r.id.startswith("resp_") and r.object == "response"
    created_at = raw.http_response.json()["created_at"]
    assert isinstance(created_at, int) and abs(created_at - time.time()) < 120
    assert r.status == "completed" and r.error is None and r.incomplete_details is None
    assert r.model == EN
    assert [o.type for o in r.output] == ["message"]
    assert r.output[0].role == "assistant" and r.output[0].status == "completed"
    assert r.output_text == answer(EN, "What is the capital of France?")
    assert r.instructions == "Answer briefly." and r.metadata == {"ticket": "T-1"}
    assert r.temperature == 0.3 and r.top_p == 0.9 and r.max_output_tokens == 200 and r.user == "alice"
    assert r.store is True and r.previous_response_id is None
    u = r.usage
    assert u.input_tokens > 0 and u.output_tokens == len(r.output_text.split(" "))
    assert u.total_tokens == u.input_tokens + u.output_tokens
    # The gateway's headers: its request id, the route and the residency of the model that served.
    assert raw.headers["x-audit-trace-id"].startswith("req-")
    assert raw.headers["x-route-policy"] == "explicit-model"
    assert raw.headers["x-data-residency"] == REGION[EN]
    # What the upstream got: a chat request, instructions first, Responses-only fields left out.
    sent = upstream(sim)
    assert roles_and_texts(sent["messages"]) == [("system", "Answer briefly."),
                                                 ("user", "What is the capital of France?")]
    assert sent["temperature"] == 0.3 and sent["top_p"] == 0.9 and sent["max_tokens"] == 200
    assert sent["user"] == "alice" and sent["stream"] is False
    for field in ("input", "instructions", "metadata", "store", "max_output_tokens", "previous_response_id"):
        assert field not in sent, (field, sent)


def test_the_router_picks_the_model_and_the_response_names_it(client):
    raw = client.responses.with_raw_response.create(model="auto-router", input="Hi, which model are you?")
    r = raw.parse()
    assert r.model in REGION and r.model != "auto-router"
    assert r.model in r.output_text
    assert raw.headers["x-data-residency"] == REGION[r.model]


def test_input_items_of_every_served_kind_become_chat_messages(client, http, sim):
    image = "https://images.example.org/cat.png"
    r = client.responses.create(model=EN, input=[
        {"role": "developer", "content": "Rules first."},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "What is in "}, {"type": "input_text", "text": "this picture?"},
            {"type": "input_image", "image_url": image, "detail": "auto"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A cat."}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"role": "user", "content": "And its colour?"},
    ])
    assert r.output_text == answer(EN, "And its colour?")
    sent = upstream(sim)["messages"]
    assert sent == [
        {"role": "system", "content": "Rules first."},
        {"role": "user", "content": [{"type": "text", "text": "What is in "},
                                     {"type": "text", "text": "this picture?"},
                                     {"type": "image_url", "image_url": {"url": image}}]},
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": "And its colour?"},
    ], sent
    items = input_items(http, r.id, order="asc")["data"]
    assert [i["type"] for i in items] == ["message"] * 4
    assert [i["role"] for i in items][1:] == ["user", "assistant", "user"]
    assert items[1]["content"][2] == {"type": "input_image", "image_url": image}
    assert items[2]["content"] == [{"type": "output_text", "text": "A cat."}]


def test_a_streamed_response_is_the_typed_event_sequence(client, sim):
    raw = client.responses.with_raw_response.create(model=EN, input="Tell me about Riyadh", stream=True)
    assert raw.headers["content-type"].startswith("text/event-stream")
    assert raw.headers["x-data-residency"] == REGION[EN] and raw.headers["x-route-policy"]
    assert raw.headers["x-audit-trace-id"].startswith("req-")
    events = list(raw.parse())
    types = [e.type for e in events]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert deltas
    assert types == (["response.created", "response.in_progress", "response.output_item.added",
                      "response.content_part.added"] + ["response.output_text.delta"] * len(deltas)
                     + ["response.output_text.done", "response.content_part.done",
                        "response.output_item.done", "response.completed"]), types
    created, done = events[0].response, events[-1].response
    assert created.status == "in_progress" and created.output == [] and created.id == done.id
    text = "".join(d.delta for d in deltas)
    assert text == answer(EN, "Tell me about Riyadh")
    item_id = events[2].item.id
    assert all(e.item_id == item_id for e in deltas)
    assert events[-4].text == text and events[-2].item.content[0].text == text
    assert done.status == "completed" and done.model == EN and done.output_text == text
    assert done.usage.output_tokens > 0
    assert done.usage.total_tokens == done.usage.input_tokens + done.usage.output_tokens
    assert upstream(sim)["stream"] is True
    # Stored as it was told.
    stored = client.responses.retrieve(done.id)
    assert stored.output_text == text and stored.usage.output_tokens == done.usage.output_tokens


def test_the_stream_on_the_wire_names_each_event_and_ends_without_done(http):
    with http.stream("POST", "/v1/responses", json={"model": EN, "input": "wire", "stream": True}) as r:
        assert r.status_code == 200 and r.headers["cache-control"] == "no-cache"
        body = r.read().decode()
    frames = [f for f in body.split("\n\n") if f.strip()]
    assert "[DONE]" not in body
    for f in frames:
        event, data = f.split("\n")
        assert event.startswith("event: ") and data.startswith("data: "), f
        assert json.loads(data.removeprefix("data: "))["type"] == event.removeprefix("event: ")
    assert frames[-1].startswith("event: response.completed\n")


def test_arabic_streams_and_is_stored_whole(client, http):
    question = "ما هي عاصمة المملكة العربية السعودية؟"
    with client.responses.stream(model="jais-30b-chat", input=question) as stream:
        deltas = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert deltas == final.output_text and question in deltas and deltas.startswith("مرحباً")
    assert client.responses.retrieve(final.id).output_text == deltas
    assert input_items(http, final.id)["data"][0]["content"][0]["text"] == question


def test_the_stream_helper_accumulates_the_final_response(client):
    deltas = []
    with client.responses.stream(model=CODER, input="Write a haiku") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
    assert final.status == "completed" and final.model == CODER
    assert final.output_text == "".join(deltas) == answer(CODER, "Write a haiku")
    assert client.responses.retrieve(final.id).output_text == final.output_text


def test_usage_is_counted_when_the_upstream_reports_none(client, sim):
    harness.sim_set(sim, EN, no_usage=True)
    plain = client.responses.create(model=EN, input="count me")
    assert plain.usage.output_tokens > 0 and plain.usage.input_tokens > 0
    streamed = list(client.responses.create(model=EN, input="count me", stream=True))[-1].response
    assert streamed.usage.output_tokens > 0 and streamed.usage.input_tokens > 0


# --- Tools and structured output ----------------------------------------------------------------


def test_a_function_tool_is_called_then_answered_with_function_call_output(client, http, sim):
    r1 = client.responses.create(model=EN, input="Weather in Jeddah?", tools=[WEATHER],
                                 tool_choice={"type": "function", "name": "get_weather"},
                                 parallel_tool_calls=False)
    sent = upstream(sim)
    assert sent["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": WEATHER["description"], "parameters": WEATHER["parameters"]}}]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert sent["parallel_tool_calls"] is False
    assert r1.status == "completed" and [o.type for o in r1.output] == ["function_call"]
    call = r1.output[0]
    assert call.name == "get_weather" and call.call_id and call.status == "completed"
    assert json.loads(call.arguments) == {"text": answer(EN, "Weather in Jeddah?")}

    r2 = client.responses.create(model=EN, previous_response_id=r1.id, tools=[WEATHER], input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny, 31 degrees"}])
    assert r2.previous_response_id == r1.id
    assert r2.output_text == answer(EN, "Sunny, 31 degrees")
    sent = upstream(sim)["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"] == [{"id": call.call_id, "type": "function", "function": {
        "name": "get_weather", "arguments": call.arguments}}]
    assert sent[2] == {"role": "tool", "tool_call_id": call.call_id, "content": "Sunny, 31 degrees"}
    # r2's input items are its own turn only: the tool's output.
    items = input_items(http, r2.id)["data"]
    assert [(i["type"], i["call_id"], i["output"]) for i in items] == [
        ("function_call_output", call.call_id, "Sunny, 31 degrees")]


def test_a_streamed_function_call_then_its_output_sent_at_once(client):
    events = []
    continued = None
    for event in client.responses.create(model=CODER, input="Weather in Dammam?", tools=[WEATHER], stream=True):
        events.append(event)
        if event.type == "response.completed":
            call = event.response.output[0]
            # At once, before the stream is even read to its end.
            continued = client.responses.create(
                model=CODER, previous_response_id=event.response.id,
                input=[{"type": "function_call_output", "call_id": call.call_id, "output": "Windy"}])
    types = [e.type for e in events]
    assert types == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.function_call_arguments.delta", "response.function_call_arguments.done",
                     "response.output_item.done", "response.completed"], types
    added, args_done, item_done = events[2], events[4], events[5]
    assert added.item.type == "function_call" and added.item.name == "get_weather"
    assert added.item.status == "in_progress" and added.item.arguments == ""
    assert args_done.name == "get_weather" and args_done.arguments == events[3].delta
    assert json.loads(args_done.arguments) == {"text": answer(CODER, "Weather in Dammam?")}
    assert item_done.item.status == "completed" and item_done.item.arguments == args_done.arguments
    assert continued is not None and continued.output_text == answer(CODER, "Windy")


def test_the_stream_helper_reports_function_call_arguments(client):
    with client.responses.stream(model=EN, input="Weather in Abha?", tools=[WEATHER]) as stream:
        final = stream.get_final_response()
    call = final.output[0]
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads(call.arguments)["text"] == answer(EN, "Weather in Abha?")


def test_a_history_of_function_calls_sent_by_the_client(client, http, sim):
    r = client.responses.create(model=EN, store=True, input=[
        {"role": "user", "content": "Weather in two cities?"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "Riyadh"}'},
        {"type": "function_call", "call_id": "c2", "name": "get_weather", "arguments": '{"city": "Abha"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "Hot"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "Mild"}]},
    ])
    sent = upstream(sim)["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert [c["id"] for c in sent[1]["tool_calls"]] == ["c1", "c2"] and sent[1]["content"] is None
    assert sent[3] == {"role": "tool", "tool_call_id": "c2", "content": "Mild"}
    assert r.output_text == answer(EN, "Mild")
    items = input_items(http, r.id, order="asc")["data"]
    assert [(i["type"], i.get("call_id")) for i in items] == [
        ("message", None), ("function_call", "c1"), ("function_call", "c2"),
        ("function_call_output", "c1"), ("function_call_output", "c2")]
    assert items[2]["arguments"] == '{"city": "Abha"}' and items[4]["output"] == "Mild"
    assert len({i["id"] for i in items}) == 5


class City(BaseModel):
    name: str
    population: int
    region: Literal["najd", "hejaz"]
    landmarks: list[str]


CITY_SCHEMA = {"type": "object", "additionalProperties": False,
               "required": ["name", "population"],
               "properties": {"name": {"type": "string"}, "population": {"type": "integer", "minimum": 1000}}}


def test_text_format_json_schema_and_json_object_become_response_format(client, sim):
    r = client.responses.create(model=EN, input="Describe Riyadh", text={"format": {
        "type": "json_schema", "name": "city", "schema": CITY_SCHEMA, "strict": True}})
    assert upstream(sim)["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "city", "schema": CITY_SCHEMA, "strict": True}}
    assert json.loads(r.output_text) == {"name": answer(EN, "Describe Riyadh"), "population": 1000}
    assert r.text.format.type == "json_schema" and r.text.format.name == "city"

    r = client.responses.create(model=EN, input="Describe Jeddah", text={"format": {"type": "json_object"}})
    assert upstream(sim)["response_format"] == {"type": "json_object"}
    assert json.loads(r.output_text) == {"answer": answer(EN, "Describe Jeddah")}

    client.responses.create(model=EN, input="plain", text={"format": {"type": "text"}})
    assert "response_format" not in upstream(sim)


def test_responses_parse_and_stream_return_the_pydantic_model(client, sim):
    parsed = client.responses.parse(model=EN, input="Describe Taif", text_format=City)
    city = parsed.output_parsed
    assert isinstance(city, City)
    assert city.name == answer(EN, "Describe Taif") and city.region == "najd" and city.population == 1
    assert upstream(sim)["response_format"]["json_schema"]["name"] == "City"
    with client.responses.stream(model=EN, input="Describe Medina", text_format=City) as stream:
        final = stream.get_final_response()
    assert isinstance(final.output_parsed, City) and final.output_parsed.landmarks


# --- Stored responses: retrieve, input items, delete ---------------------------------------------


def test_retrieve_lists_input_items_in_pages_and_delete(client, http):
    turn = [{"role": "user", "content": f"message {i}"} if i % 2 == 0 else
            {"role": "assistant", "content": f"message {i}"} for i in range(5)]
    r = client.responses.create(model=EN, input=turn, metadata={"case": "pages"})
    got = client.responses.retrieve(r.id)
    assert got.id == r.id and got.status == "completed" and got.metadata == {"case": "pages"}
    assert got.output_text == r.output_text == answer(EN, "message 4")
    assert got.usage.total_tokens == r.usage.total_tokens

    # Newest first by default; the SDK pages through them with `after`.
    desc = input_items(http, r.id)
    texts = [i["content"][0]["text"] for i in desc["data"]]
    assert texts == [f"message {i}" for i in (4, 3, 2, 1, 0)] and desc["has_more"] is False
    assert desc["first_id"] == desc["data"][0]["id"] and desc["last_id"] == desc["data"][-1]["id"]
    assert len({i["id"] for i in desc["data"]}) == 5
    first = client.responses.input_items.list(r.id, limit=2)
    assert len(first.data) == 2 and first.has_more is True
    assert [i.content[0].text for i in first] == texts  # auto-pagination: all five, in order
    asc = [i.content[0].text for i in client.responses.input_items.list(r.id, order="asc", limit=3)]
    assert asc == texts[::-1]
    assert [i.role for i in client.responses.input_items.list(r.id, order="asc")] == [
        "user", "assistant", "user", "assistant", "user"]
    ids = [i["id"] for i in desc["data"]]
    page = input_items(http, r.id, after=ids[0], limit=2)
    assert [i["id"] for i in page["data"]] == ids[1:3] and page["has_more"] is True
    page = input_items(http, r.id, after=ids[2], limit=2)
    assert [i["id"] for i in page["data"]] == ids[3:5] and page["has_more"] is False
    page = input_items(http, r.id, before=ids[3])
    assert [i["id"] for i in page["data"]] == ids[:3] and page["has_more"] is False
    page = input_items(http, r.id, after=ids[0], before=ids[4], limit=2)
    assert [i["id"] for i in page["data"]] == ids[1:3] and page["has_more"] is True
    for params, param in [({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"order": "newest"}, "order"),
                          ({"after": "msg_nope"}, "after"), ({"before": "msg_nope"}, "before")]:
        assert_error(http.get(f"/v1/responses/{r.id}/input_items", params=params), 400, param)

    deleted = http.delete(f"/v1/responses/{r.id}")
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"id": r.id, "object": "response.deleted", "deleted": True}
    assert_error(http.get(f"/v1/responses/{r.id}"), 404, code="not_found")
    assert_error(http.get(f"/v1/responses/{r.id}/input_items"), 404)
    assert_error(http.delete(f"/v1/responses/{r.id}"), 404)
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model=EN, previous_response_id=r.id, input="still there?")
    assert e.value.code == "previous_response_not_found" and e.value.param == "previous_response_id"
    # The SDK's delete and retrieve on an unknown id.
    other = client.responses.create(model=EN, input="to be deleted by the SDK")
    client.responses.delete(other.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(other.id)


def test_a_chain_with_a_deleted_link_is_not_found(client, http):
    r1 = client.responses.create(model=EN, input="one")
    r2 = client.responses.create(model=EN, input="two", previous_response_id=r1.id)
    r3 = client.responses.create(model=EN, input="three", previous_response_id=r2.id)
    assert http.delete(f"/v1/responses/{r2.id}").status_code == 200
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model=EN, input="four", previous_response_id=r3.id)
    assert e.value.code == "previous_response_not_found" and e.value.param == "previous_response_id"
    assert client.responses.retrieve(r3.id).previous_response_id == r2.id


def test_input_items_accept_one_include(client):
    r = client.responses.create(model=EN, input="include me")
    one = client.responses.input_items.list(r.id, include=["message.input_image.image_url"])
    assert [i.type for i in one.data] == ["message"]


def test_input_items_accept_several_includes(client):
    r = client.responses.create(model=EN, input="include us")
    two = client.responses.input_items.list(
        r.id, include=["message.input_image.image_url", "message.output_text.logprobs"])
    assert [i.type for i in two.data] == ["message"]


def test_item_ids_are_unique_across_a_responses_input_and_output(client, http):
    r = client.responses.create(model=EN, input="Which ids?")
    input_ids = {i["id"] for i in input_items(http, r.id)["data"]}
    output_ids = {o.id for o in r.output}
    assert not input_ids & output_ids, (input_ids, output_ids)


def test_store_false_answers_but_keeps_nothing(client, http):
    r = client.responses.create(model=EN, input="forget me", store=False)
    assert r.store is False and r.output_text == answer(EN, "forget me")
    assert_error(http.get(f"/v1/responses/{r.id}"), 404)
    assert_error(http.get(f"/v1/responses/{r.id}/input_items"), 404)
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model=EN, previous_response_id=r.id, input="and now?")
    assert e.value.code == "previous_response_not_found"
    done = list(client.responses.create(model=EN, input="forget me too", store=False, stream=True))[-1]
    assert done.type == "response.completed" and done.response.store is False
    assert_error(http.get(f"/v1/responses/{done.response.id}"), 404)


# --- Chains -------------------------------------------------------------------------------------


def test_a_continuation_sent_at_once_always_finds_the_previous_response(client, sim):
    for i in range(20):
        first = client.responses.create(model=EN, input=f"question {i}")
        second = client.responses.create(model=EN, previous_response_id=first.id, input="and then?")
        assert second.previous_response_id == first.id
        assert roles_and_texts(upstream(sim)["messages"]) == [
            ("user", f"question {i}"), ("assistant", answer(EN, f"question {i}")), ("user", "and then?")]


def test_a_streamed_continuation_as_soon_as_response_completed_arrives(client, sim):
    previous = None
    for i in range(8):
        stream = client.responses.create(model=CODER, input=f"step {i}", stream=True,
                                         previous_response_id=previous)
        for event in stream:
            if event.type == "response.completed":
                previous = event.response.id
                break  # continue at once, leaving the rest of the stream unread
        stream.close()
        assert previous
    # The chain of eight streamed turns, continued once more, reaches the upstream whole.
    last = client.responses.create(model=CODER, input="done?", previous_response_id=previous)
    sent = roles_and_texts(upstream(sim)["messages"])
    assert len(sent) == 17 and sent[-1] == ("user", "done?")
    assert sent[0::2][:8] == [("user", f"step {i}") for i in range(8)]
    assert sent[1::2] == [("assistant", answer(CODER, f"step {i}")) for i in range(8)]
    assert last.previous_response_id == previous


def test_the_chain_goes_upstream_in_order_without_earlier_instructions(client, sim):
    r1 = client.responses.create(model=EN, input="first question", instructions="Rule one: be terse.")
    assert roles_and_texts(upstream(sim)["messages"])[0] == ("system", "Rule one: be terse.")
    r2 = client.responses.create(model=CODER, input="second question", previous_response_id=r1.id)
    assert r2.instructions is None and r2.model == CODER
    assert roles_and_texts(upstream(sim)["messages"]) == [
        ("user", "first question"), ("assistant", r1.output_text), ("user", "second question")]
    r3 = client.responses.create(model=EN, input=[{"role": "user", "content": "third question"}],
                                 previous_response_id=r2.id, instructions="Rule two: be kind.")
    assert roles_and_texts(upstream(sim)["messages"]) == [
        ("system", "Rule two: be kind."),
        ("user", "first question"), ("assistant", r1.output_text),
        ("user", "second question"), ("assistant", answer(CODER, "second question")),
        ("user", "third question")]
    assert r3.instructions == "Rule two: be kind." and r3.previous_response_id == r2.id
    # A branch from the middle of the chain: r1 then a different second turn.
    client.responses.create(model=EN, input="another second", previous_response_id=r1.id)
    assert roles_and_texts(upstream(sim)["messages"]) == [
        ("user", "first question"), ("assistant", r1.output_text), ("user", "another second")]


def test_another_teams_response_is_not_found_everywhere(client, other, http, sim):
    mine = client.responses.create(model=EN, input="team one's secret plan")
    before = upstream_calls(sim)
    with pytest.raises(openai.NotFoundError) as e:
        other.responses.create(model=EN, input="continue it", previous_response_id=mine.id)
    assert e.value.status_code == 404
    assert e.value.code == "previous_response_not_found" and e.value.param == "previous_response_id"
    assert e.value.type == "invalid_request_error"
    with pytest.raises(openai.NotFoundError):
        list(other.responses.create(model=EN, input="continue it", previous_response_id=mine.id, stream=True))
    assert upstream_calls(sim) == before, "a refused continuation reaches no model"
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(mine.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.input_items.list(mine.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.delete(mine.id)
    assert client.responses.retrieve(mine.id).output_text == mine.output_text, "not deleted by the other team"
    # And the other way round; each team chains its own.
    theirs = other.responses.create(model=EN, input="team two's plan")
    assert other.responses.create(model=EN, input="go on", previous_response_id=theirs.id).output_text
    assert_error(http.get(f"/v1/responses/{theirs.id}"), 404)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model=EN, input="go on", previous_response_id=theirs.id)


# --- Bad requests -------------------------------------------------------------------------------

BAD = [
    ({"model": "llama-3.2-3b-instruct", "input": "hi", "conversation": "conv_1"}, "conversation"),
    ({"model": "llama-3.2-3b-instruct", "input": "hi", "prompt": {"id": "pmpt_1"}}, "prompt"),
    ({"input": "x"}, "model"),
    ({"model": ""}, "model"),
    ({"model": EN}, "input"),
    ({"model": EN, "input": []}, "input"),
    ({"model": EN, "input": 7}, "input"),
    ({"model": EN, "input": [7]}, "input[0]"),
    ({"model": EN, "input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].id"),
    ({"model": EN, "input": [{"type": "item_reference"}]}, "input[0].id"),
    ({"model": EN, "input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
    ({"model": EN, "input": [{"role": "user", "content": 7}]}, "input[0].content"),
    ({"model": EN, "input": [{"role": "user", "content": [{"type": "input_file", "file_id": "file-1"}]}]},
     "input[0].content[0].type"),
    ({"model": EN, "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file-1"}]}]},
     "input[0].content[0]"),
    ({"model": EN, "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "input[0]"),
    ({"model": EN, "input": [{"type": "function_call_output", "output": "x"}]}, "input[0]"),
    ({"model": EN, "input": [{"type": "function_call_output", "call_id": "c", "output": 7}]}, "input[0].output"),
    ({"model": EN, "input": "x", "instructions": 7}, "instructions"),
    ({"model": EN, "input": "x", "previous_response_id": "msg_123"}, "previous_response_id"),
    ({"model": EN, "input": "x", "store": "yes"}, "store"),
    ({"model": EN, "input": "x", "stream": "yes"}, "stream"),
    ({"model": EN, "input": "x", "background": True}, "background"),
    ({"model": EN, "input": "x", "metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
    ({"model": EN, "input": "x", "metadata": {"n": 1}}, "metadata"),
    ({"model": EN, "input": "x", "max_output_tokens": 0}, "max_output_tokens"),
    ({"model": EN, "input": "x", "max_output_tokens": "5"}, "max_output_tokens"),
    ({"model": EN, "input": "x", "tools": {"type": "function"}}, "tools"),
    ({"model": EN, "input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
    ({"model": EN, "input": "x", "tools": [WEATHER, {"type": "teleport"}]}, "tools[1].type"),
    ({"model": EN, "input": "x", "tool_choice": "sometimes"}, "tool_choice"),
    ({"model": EN, "input": "x", "tool_choice": {"type": "function"}}, "tool_choice.name"),
    ({"model": EN, "input": "x", "text": {"format": {"type": "xml"}}}, "text.format.type"),
    ({"model": EN, "input": "x", "text": {"format": {"type": "json_schema", "name": "s"}}}, "text.format.schema"),
    ({"model": EN, "input": "x", "temperature": "hot"}, "temperature"),
    ({"model": EN, "input": "x", "user": 7}, "user"),
]


@pytest.mark.parametrize("body,param", BAD, ids=[p for _, p in BAD])
def test_bad_bodies_are_400_naming_the_parameter(http, sim, body, param):
    before = upstream_calls(sim)
    err = assert_error(http.post("/v1/responses", json=body), 400, param)
    assert err["type"] == "invalid_request_error" and err["message"]
    assert upstream_calls(sim) == before


@pytest.mark.parametrize("tool", [
    {"type": "web_search"}, {"type": "web_search_preview"},
    {"type": "file_search", "vector_store_ids": ["vs_1"]},
    {"type": "computer_use_preview", "display_width": 1024, "display_height": 768, "environment": "browser"},
    {"type": "code_interpreter", "container": {"type": "auto"}},
], ids=lambda t: t["type"])
def test_built_in_tools_are_refused_by_name(client, sim, tool):
    before = upstream_calls(sim)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=EN, input="search the web", tools=[WEATHER, tool])
    assert e.value.param == "tools[1].type" and e.value.type == "invalid_request_error"
    assert f"`{tool['type']}`" in e.value.message
    assert upstream_calls(sim) == before


def test_unknown_ids_are_404_in_the_error_shape(http, client):
    assert_error(http.get("/v1/responses/resp_nope"), 404, code="not_found")
    assert_error(http.delete("/v1/responses/resp_nope"), 404)
    assert_error(http.get("/v1/responses/resp_nope/input_items"), 404)
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model=EN, input="x", previous_response_id="resp_nope")
    assert e.value.code == "previous_response_not_found" and "resp_nope" in e.value.message


# --- The guardrail ------------------------------------------------------------------------------


def test_a_card_number_anywhere_in_the_conversation_is_refused(client, sim):
    prior = client.responses.create(model=EN, input="Charge the customer", tools=[WEATHER])
    call_id = prior.output[0].call_id
    before = upstream_calls(sim)
    for kwargs in [
        {"input": f"my card is {CARD}"},
        {"input": [{"role": "user", "content": [{"type": "input_text", "text": f"card {CARD}"}]}]},
        {"input": "hello", "instructions": f"The customer's card is {CARD}."},
        {"input": [{"type": "function_call_output", "call_id": call_id, "output": f"card on file: {CARD}"}],
         "previous_response_id": prior.id},
        {"input": f"my card is {CARD}", "stream": True},
    ]:
        with pytest.raises(openai.BadRequestError) as e:
            r = client.responses.create(model=EN, **kwargs)
            if kwargs.get("stream"):
                list(r)
        assert e.value.status_code == 400, kwargs
        assert e.value.type == "guardrail_violation" and e.value.code == "pii_detected", kwargs
        assert "credit_card" in e.value.message and "4111" not in e.value.message
    assert upstream_calls(sim) == before, "a blocked request never reaches a model"


def test_redacted_values_never_reach_the_upstream_nor_the_store(client, http, sim):
    r1 = client.responses.create(model=EN, input="Write to salem@example.sa please", tools=[WEATHER])
    assert "salem@example.sa" not in json.dumps(upstream(sim))
    assert upstream(sim)["messages"][-1]["content"] == "Write to [EMAIL] please"
    assert "salem@example.sa" not in r1.output[0].arguments and "[EMAIL]" in r1.output[0].arguments
    item = input_items(http, r1.id)["data"][0]
    assert item["content"] == [{"type": "input_text", "text": "Write to [EMAIL] please"}]

    # A tool's output is checked too; its turn is stored redacted.
    r2 = client.responses.create(model=EN, previous_response_id=r1.id, input=[
        {"type": "function_call_output", "call_id": r1.output[0].call_id, "output": "Reach rania@example.org"}])
    sent = upstream(sim)["messages"]
    assert sent[0]["content"] == "Write to [EMAIL] please"
    assert sent[-1] == {"role": "tool", "tool_call_id": r1.output[0].call_id, "content": "Reach [EMAIL]"}
    assert r2.output_text == answer(EN, "Reach [EMAIL]")
    assert input_items(http, r2.id)["data"][0]["output"] == "Reach [EMAIL]"
    # The chain, read back from the store, stays redacted.
    client.responses.create(model=EN, previous_response_id=r2.id, input="thanks")
    chain = json.dumps(upstream(sim)["messages"])
    assert "example.sa" not in chain and "example.org" not in chain

    # Instructions are checked too.
    client.responses.create(model=EN, input="hi", instructions="Copy ops@example.com on replies.")
    assert upstream(sim)["messages"][0] == {"role": "system", "content": "Copy [EMAIL] on replies."}


def test_instructions_are_stored_redacted(client, http, sim):
    r = client.responses.create(model=EN, input="hi", instructions="Copy ops@example.com on replies.")
    assert upstream(sim)["messages"][0]["content"] == "Copy [EMAIL] on replies."
    stored = http.get(f"/v1/responses/{r.id}").text
    assert "ops@example.com" not in stored, stored


def test_the_models_answer_is_checked_on_the_way_out(client, http, sim):
    harness.sim_reply(sim, EN, "Write to salem@example.sa today")
    try:
        r = client.responses.create(model=EN, input="Who do I write to?")
        assert r.output_text == "Write to [EMAIL] today"
        assert "example.sa" not in http.get(f"/v1/responses/{r.id}").text
        with client.responses.stream(model=EN, input="Who do I write to?") as stream:
            deltas = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
            final = stream.get_final_response()
        assert deltas == final.output_text == "Write to [EMAIL] today"
        # A continuation carries the redacted answer upstream.
        client.responses.create(model=EN, input="thanks", previous_response_id=r.id)
        assert upstream(sim)["messages"][1] == {"role": "assistant", "content": "Write to [EMAIL] today"}

        harness.sim_reply(sim, EN, f"Charge {CARD} now")
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model=EN, input="Which card?")
        assert e.value.type == "guardrail_violation" and e.value.code == "pii_in_output"
        events = list(client.responses.create(model=EN, input="Which card?", stream=True))
        assert events[-1].type == "response.failed", [e.type for e in events]
        failed = events[-1].response
        assert failed.error.code == "pii_in_output" and "4111" not in events[-1].to_json()
        assert all("4111" not in e.to_json() for e in events)
        assert_error(http.get(f"/v1/responses/{failed.id}"), 404)
    finally:
        harness.sim_reply(sim, EN, None)


# --- Journal, usage, budgets --------------------------------------------------------------------


def test_the_journal_records_each_responses_action(client, http, admin):
    raw = client.responses.with_raw_response.create(model=EN, input="journal me", user="alice")
    r = raw.parse()
    e = journal_entry(admin, raw.headers["x-audit-trace-id"])
    assert e["action"] == "responses.create" and e["status"] == "success" and e["auth"] == "key"
    assert e["model"] == EN and e["team_id"] == "t1" and e["actor_id"] == "alice"
    assert e["routing_policy"] == "explicit-model" and e["residency_boundary"] == REGION[EN]
    assert (e["prompt_tokens"], e["completion_tokens"]) == (r.usage.input_tokens, r.usage.output_tokens)

    streamed = client.responses.with_raw_response.create(model=EN, input="journal my stream", stream=True)
    done = list(streamed.parse())[-1].response
    e = journal_entry(admin, streamed.headers["x-audit-trace-id"])
    assert e["action"] == "responses.create" and e["status"] == "success"
    assert e["completion_tokens"] == done.usage.output_tokens

    for method, path, action in [("GET", f"/v1/responses/{r.id}", "responses.retrieve"),
                                 ("GET", f"/v1/responses/{r.id}/input_items", "responses.input_items.list"),
                                 ("DELETE", f"/v1/responses/{r.id}", "responses.delete")]:
        resp = http.request(method, path)
        assert resp.status_code == 200, resp.text
        assert journal_entry(admin, resp.headers["x-audit-trace-id"])["action"] == action

    with pytest.raises(openai.BadRequestError) as blocked:
        client.responses.create(model=EN, input=f"card {CARD}")
    e = journal_entry(admin, blocked.value.response.headers["x-audit-trace-id"])
    assert e["action"] == "responses.create" and e["status"] == "blocked"


def test_responses_are_charged_to_the_team_and_key(gateway, admin):
    made = new_team_key(admin)
    c = sdk(gateway, made["key"]["key"])
    plain = c.responses.create(model=EN, input="charge me")
    streamed = list(c.responses.create(model=CODER, input="charge my stream", stream=True))[-1].response
    with_tool = c.responses.create(model=EN, input="and a tool", tools=[WEATHER])

    def settled():
        r = admin.get("/v1/admin/usage", params={"key_id": made["key"]["id"]})
        assert r.status_code == 200, r.text
        return r.json() if r.json()["total"]["requests"] == 3 else None
    u = harness.wait_for(settled, what="three charged responses")
    answers = [plain, streamed, with_tool]
    assert u["total"]["tokens_in"] == sum(a.usage.input_tokens for a in answers)
    assert u["total"]["tokens_out"] == sum(a.usage.output_tokens for a in answers)
    assert u["total"]["spend"] > 0
    assert {row["model"] for row in u["data"]} == {EN, CODER}
    team = admin.get(f"/v1/admin/teams/{made['team']['id']}").json()
    assert team["spend"]["spent"] == pytest.approx(u["total"]["spend"]) and team["spend"]["reserved"] == 0


def test_a_budget_refuses_responses_as_it_refuses_chat(gateway, admin, sim):
    made = new_team_key(admin, budget=0.00001)  # 10 micros; 1,000 output tokens of llama cost 100
    c = sdk(gateway, made["key"]["key"])
    before = upstream_calls(sim)
    for stream in (False, True):
        with pytest.raises(openai.RateLimitError) as e:
            r = c.responses.create(model=EN, input="too dear", max_output_tokens=1000, stream=stream)
            if stream:
                list(r)
        assert e.value.status_code == 429 and e.value.code == "insufficient_quota"
    assert upstream_calls(sim) == before


def test_a_key_over_its_tokens_per_day_is_refused(gateway, admin):
    made = new_team_key(admin)
    r = admin.post("/v1/admin/keys", json={"team_id": made["team"]["id"], "role": "member", "tpd": 10})
    assert r.status_code == 201, r.text
    c = sdk(gateway, r.json()["key"])
    assert c.responses.create(model=EN, input="spend my tokens", max_output_tokens=20).usage.total_tokens >= 10
    with pytest.raises(openai.RateLimitError) as e:
        c.responses.create(model=EN, input="once more")
    assert e.value.code == "tokens_per_day_exceeded"


def test_responses_are_for_members_not_auditors(gateway, admin):
    made = new_team_key(admin)
    r = admin.post("/v1/admin/keys", json={"team_id": made["team"]["id"], "role": "auditor"})
    assert r.status_code == 201, r.text
    auditor = sdk(gateway, r.json()["key"])
    with pytest.raises(openai.PermissionDeniedError) as e:
        auditor.responses.create(model=EN, input="may I?")
    assert e.value.type == "permission_error"
    with pytest.raises(openai.PermissionDeniedError):
        auditor.responses.retrieve("resp_any")


def stream_abandoned_after_created(gateway, secret: str, **body) -> str:
    """Starts a streamed response, reads `response.created`, then hangs up; the response's id."""
    with httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {secret}"}, timeout=20) as c:
        with c.stream("POST", "/v1/responses", json={**body, "stream": True}) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if line.startswith("data: "):
                    created = json.loads(line.removeprefix("data: "))
                    assert created["type"] == "response.created"
                    return created["response"]["id"]
    raise AssertionError("no response.created")


def test_an_abandoned_streamed_response_is_charged_and_not_stored(gateway, admin, sim):
    made = new_team_key(admin)
    harness.sim_set(sim, EN, token_interval_ms=100)
    rid = stream_abandoned_after_created(gateway, made["key"]["key"], model=EN, input="a slow one")

    def charged():
        r = admin.get("/v1/admin/usage", params={"key_id": made["key"]["id"]})
        return r.json()["total"]["requests"] == 1
    harness.wait_for(charged, what="the abandoned stream to be charged")
    key = admin.get(f"/v1/admin/keys/{made['key']['id']}").json()
    assert key["spend"]["reserved"] == 0
    with pytest.raises(openai.NotFoundError):
        sdk(gateway, made["key"]["key"]).responses.retrieve(rid)


def test_an_abandoned_streamed_response_cancels_its_upstream_at_once(gateway, keys, sim):
    harness.sim_set(sim, EN, token_interval_ms=200)  # ~3.4 s for the whole answer
    before = harness.sim_stats(sim)
    stream_abandoned_after_created(gateway, keys["member"], model=EN, input="a very slow one")

    def cancelled():
        s = harness.sim_stats(sim)
        return s["active_streams"] == 0 and s["cancelled_streams"] > before["cancelled_streams"]
    try:
        harness.wait_for(cancelled, timeout=1.5, what="the upstream stream to be cancelled")
    finally:
        # Leave no stream running into the next test.
        harness.wait_for(lambda: harness.sim_stats(sim)["active_streams"] == 0, timeout=10,
                         what="the upstream stream to end")


# --- Upstream failures and length cuts ----------------------------------------------------------


def test_an_upstream_that_breaks_mid_stream_ends_with_response_failed(client, http, sim):
    harness.sim_set(sim, EN, fail="drop_mid_stream", token_interval_ms=10)
    events = list(client.responses.create(model=EN, input="tell me a long story", stream=True))
    types = [e.type for e in events]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.failed", types
    assert "response.completed" not in types
    failed = events[-1].response
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == "upstream_unavailable" and EN in failed.error.message
    # The part received before the cut was told, and its item closed.
    assert "response.output_text.delta" in types and types[-2] == "response.output_item.done"
    assert failed.output[0].content[0].text.startswith("Hello! I am")
    assert_error(http.get(f"/v1/responses/{failed.id}"), 404)  # a failed response is not stored
    # The helper sees the failure too: there is no final response.
    with client.responses.stream(model=EN, input="another long story") as stream:
        seen = [e.type for e in stream]
        assert seen[-1] == "response.failed"
        with pytest.raises(RuntimeError):
            stream.get_final_response()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_upstream_that_fails_before_answering_is_502(client, sim, stream):
    harness.sim_set(sim, CODER, fail="error500")
    with pytest.raises(openai.InternalServerError) as e:
        r = client.responses.create(model=CODER, input="hi", stream=stream)
        if stream:
            list(r)
    assert e.value.status_code == 502 and e.value.code == "upstream_unavailable"
    assert e.value.response.headers["x-data-residency"] == REGION[CODER]


def test_a_non_streamed_answer_cut_off_is_502(client, sim):
    harness.sim_set(sim, EN, fail="drop_mid_stream")
    with pytest.raises(openai.InternalServerError) as e:
        client.responses.create(model=EN, input="hi")
    assert e.value.status_code == 502


def test_the_length_limit_makes_the_response_incomplete(client, http, sim):
    full = answer(EN, "a long answer please")
    r = client.responses.create(model=EN, input="a long answer please", max_output_tokens=5)
    assert upstream(sim)["max_tokens"] == 5
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 5
    assert r.output_text == "".join(full.split(" ")[i] if i == 0 else " " + full.split(" ")[i] for i in range(5))
    assert client.responses.retrieve(r.id).status == "incomplete"
    # An incomplete response can be continued.
    assert client.responses.create(model=EN, input="go on", previous_response_id=r.id).status == "completed"

    events = list(client.responses.create(model=EN, input="a long answer please", max_output_tokens=5,
                                          stream=True))
    assert events[-1].type == "response.incomplete", [e.type for e in events]
    done = events[-1].response
    assert done.status == "incomplete" and done.incomplete_details.reason == "max_output_tokens"
    assert done.output_text == r.output_text and done.usage.output_tokens == 5
    assert http.get(f"/v1/responses/{done.id}").json()["status"] == "incomplete"



def test_item_references_resolve_to_the_teams_stored_items(client, http, sim):
    """The Vercel AI SDK sends an earlier turn's items as `item_reference`s when `store` is on."""
    first = client.responses.create(model=EN, input="remember the word kumquat")
    message = next(o for o in first.output if o.type == "message")
    inputs = client.responses.input_items.list(first.id).data
    second = client.responses.create(model=EN, input=[
        {"type": "item_reference", "id": inputs[0].id},
        {"type": "item_reference", "id": message.id},
        {"role": "user", "content": "what was the word?"},
    ])
    assert second.status == "completed"
    sent = harness.sim_requests(sim)[-1]["body"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"], sent
    assert "kumquat" in sent[0]["content"] and sent[1]["content"] == message.content[0].text
    # An item nobody stored: 404 naming the item.
    r = http.post("/v1/responses", json={"model": EN, "input": [
        {"type": "item_reference", "id": message.id.replace(first.id[5:], "0" * 32)}]})
    assert r.status_code == 404, r.text
    assert r.json()["error"]["code"] == "item_not_found"
