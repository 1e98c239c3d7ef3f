"""Chat, streams, embeddings and models against the demo: the sovereignty metadata on the
response objects, routing hints, and the typed 451 / guardrail errors."""

from __future__ import annotations

import asyncio

import httpx2
import openai
import pytest

from sovereign_gateway import (
    AsyncSovereign,
    DataResidencyError,
    GuardrailViolationError,
    Sovereign,
    SovereignChatCompletion,
    SovereignModel,
    SovereignStream,
)

ARABIC = [{"role": "user", "content": "ما هي عاصمة المملكة العربية السعودية؟ أجب بجملة واحدة."}]
ENGLISH = [{"role": "user", "content": "Say hello in one short sentence."}]


def test_streamed_arabic_answer_has_the_metadata_before_the_first_chunk(member: Sovereign):
    stream = member.sovereign.chat(model="auto-router", messages=ARABIC, stream=True)
    assert isinstance(stream, SovereignStream)
    # Read from the headers: no chunk consumed yet.
    assert stream.data_residency == "sa-riyadh-1"
    assert stream.route_policy
    assert stream.sovereign_id == "demo-riyadh-1"
    assert stream.audit_trace_id
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text.strip()


def test_the_sdk_call_returns_the_typed_completion_with_metadata(member: Sovereign):
    reply = member.chat.completions.create(model="auto-router", messages=ARABIC, routing_preference="cost")
    assert isinstance(reply, SovereignChatCompletion) and isinstance(reply, openai.types.chat.ChatCompletion)
    assert reply.choices[0].message.content
    assert (reply.sovereign_id, reply.data_residency) == ("demo-riyadh-1", "sa-riyadh-1")
    assert reply.route_policy and reply.audit_trace_id
    assert "sovereignty" not in reply.model_dump()  # metadata is not part of the body


def test_embeddings_carry_metadata(member: Sovereign):
    emb = member.sovereign.embed(model="multilingual-e5-small", input=["مرحبا", "hello"])
    assert len(emb.data) == 2 and len(emb.data[0].embedding) > 0
    assert emb.sovereign_id == "demo-riyadh-1" and emb.audit_trace_id
    assert emb.data_residency


def test_models_are_typed_with_the_gateways_fields(member: Sovereign):
    models = {m.id: m for m in member.models.list()}
    jais = models["jais-30b-chat"]
    assert isinstance(jais, SovereignModel)
    assert jais.region == "sa-riyadh-1" and "ar" in (jais.languages or []) and jais.family
    one = member.models.retrieve("qwen2.5-coder-32b")
    assert isinstance(one, SovereignModel) and one.region == "eu-frankfurt-1"


@pytest.mark.parametrize("how", ["header", "routing"])
def test_sensitive_data_to_a_cloud_model_is_a_residency_error(member: Sovereign, how: str):
    hint = {"data_classification": "sensitive"} if how == "header" else {"routing": {"classification": "sensitive"}}
    with pytest.raises(DataResidencyError) as e:
        member.chat.completions.create(model="qwen2.5-coder-32b", messages=ENGLISH, **hint)
    err = e.value
    assert isinstance(err, openai.APIStatusError)
    assert (err.status, err.code, err.type) == (451, "sensitive_requires_local", "sovereignty_error")
    assert err.audit_trace_id and err.message


def test_a_card_number_is_a_guardrail_violation_and_not_retried(demo):
    sent = []
    http = httpx2.Client(event_hooks={"request": [sent.append]})
    client = Sovereign(base_url=demo.url, api_key=demo.keys["member"], max_retries=2, http_client=http)
    with pytest.raises(GuardrailViolationError) as e:
        client.chat.completions.create(
            model="auto-router",
            messages=[{"role": "user", "content": "Charge my card 4111 1111 1111 1111 please"}],
        )
    assert isinstance(e.value, openai.BadRequestError)
    assert (e.value.status, e.value.code, e.value.type) == (400, "pii_detected", "guardrail_violation")
    assert len(sent) == 1


def test_async_client_stream_and_completion(demo):
    async def run():
        async with AsyncSovereign(base_url=demo.url, api_key=demo.keys["member"]) as client:
            stream = await client.sovereign.chat(messages=ARABIC, stream=True)
            assert stream.data_residency == "sa-riyadh-1"
            chunks = [c async for c in stream]
            reply = await client.chat.completions.create(model="auto-router", messages=ARABIC)
            return chunks, reply

    chunks, reply = asyncio.run(run())
    assert chunks
    assert reply.sovereign_id == "demo-riyadh-1"


def test_async_admin_calls_are_awaitable(demo):
    async def run():
        async with AsyncSovereign(base_url=demo.url, api_key=demo.keys["admin"]) as client:
            return await client.admin.teams.list(), await client.admin.guardrail.get()

    teams, guardrail = asyncio.run(run())
    assert teams.data and guardrail.component_sha256


def test_the_stream_classes_resolve_their_chunk_type():
    # The SDK reads a stream's chunk type from `__orig_bases__`; a plain mixin there breaks it.
    from openai._streaming import extract_stream_chunk_type
    from openai.types.chat import ChatCompletionChunk

    from sovereign_gateway import SovereignAsyncStream

    assert extract_stream_chunk_type(SovereignStream) is ChatCompletionChunk
    assert extract_stream_chunk_type(SovereignAsyncStream) is ChatCompletionChunk


def test_a_raw_response_parses_to_the_typed_completion_with_metadata(member: Sovereign):
    raw = member.chat.completions.with_raw_response.create(model="auto-router", messages=ARABIC)
    assert raw.headers["x-sovereign-id"] == "demo-riyadh-1"
    reply = raw.parse()
    assert isinstance(reply, SovereignChatCompletion)
    assert (reply.sovereign_id, reply.data_residency) == ("demo-riyadh-1", "sa-riyadh-1")
    assert reply.audit_trace_id == raw.headers["x-audit-trace-id"]
