"""Client errors: the SDK raises its matching exception class with a readable message, and every error
body has the convention's shape `{"error": {"message", "type", "param", "code"}}`."""

from __future__ import annotations

import httpx
import openai
import pytest

import harness

HI = [{"role": "user", "content": "hi"}]
ERROR_KEYS = {"message", "type", "param", "code"}


def assert_error_body(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == ERROR_KEYS, body
    assert isinstance(body["error"]["message"], str) and len(body["error"]["message"]) > 10
    assert isinstance(body["error"]["type"], str) and body["error"]["type"]
    # Errors carry the gateway's identity and trace id like every other response.
    assert response.headers["x-sovereign-id"] == "test-gw-1"
    assert response.headers["x-audit-trace-id"].startswith("req-")
    return body["error"]


def sdk(gateway, api_key):
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=api_key, max_retries=0, timeout=20)


def test_bad_request_error(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="auto-router", messages=[{"role": "wizard", "content": "hi"}])
    err = e.value
    assert err.status_code == 400
    assert err.type == "invalid_request_error"
    assert err.param == "messages[0].role"
    assert "wizard" in err.body["message"] and "user" in err.body["message"]
    assert set(err.body) == ERROR_KEYS
    assert err.request_id is None or isinstance(err.request_id, str)


def test_bad_request_names_the_parameter(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="auto-router", messages=HI, extra_body={"temperature": "hot"})
    assert e.value.param == "temperature"
    assert "temperature" in e.value.body["message"]


def test_wrong_key_is_authentication_error(gateway, keys):
    wrong, _ = harness.new_key()  # well-formed, valid checksum, not configured
    with pytest.raises(openai.AuthenticationError) as e:
        sdk(gateway, wrong).chat.completions.create(model="auto-router", messages=HI)
    assert e.value.status_code == 401
    assert e.value.code == "invalid_api_key"
    assert e.value.type == "authentication_error"
    assert "Incorrect API key" in e.value.body["message"]
    assert set(e.value.body) == ERROR_KEYS
    assert wrong not in e.value.body["message"]


@pytest.mark.parametrize("api_key", ["sk-sov-" + "0" * 56, "not-a-key", "TYPO"])
def test_malformed_or_mistyped_keys_are_authentication_errors(gateway, keys, api_key):
    if api_key == "TYPO":  # the real key with its last digit changed: the checksum catches it
        real = keys["member"]
        api_key = real[:-1] + ("0" if real[-1] != "0" else "1")
    with pytest.raises(openai.AuthenticationError) as e:
        sdk(gateway, api_key).models.list()
    assert e.value.status_code == 401


def test_missing_key_is_authentication_error(gateway):
    client = sdk(gateway, "unused")
    with pytest.raises(openai.AuthenticationError) as e:
        client.chat.completions.create(model="auto-router", messages=HI,
                                       extra_headers={"Authorization": openai.Omit()})
    assert e.value.status_code == 401
    assert "Missing API key" in e.value.body["message"]
    assert "Bearer" in e.value.body["message"]


def test_unknown_model_is_not_found(client):
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="gpt-17-ultra", messages=HI)
    err = e.value
    assert err.status_code == 404
    assert err.code == "model_not_found"
    assert err.param == "model"
    assert "gpt-17-ultra" in err.body["message"]
    assert set(err.body) == ERROR_KEYS


@pytest.mark.parametrize("case", [
    ("missing key", "POST", "/v1/chat/completions", {}, b'{}', 401),
    ("basic auth", "GET", "/v1/models", {"Authorization": "Basic dXNlcjpwYXNz"}, None, 401),
    ("bearer without key", "GET", "/v1/models", {"Authorization": "Bearer"}, None, 401),
    ("unknown path", "GET", "/v1/nothing-here", "auth", None, 404),
    ("unknown model", "GET", "/v1/models/nope", "auth", None, 404),
    ("wrong method", "GET", "/v1/chat/completions", "auth", None, 405),
    ("bad json", "POST", "/v1/chat/completions", "auth", b"{", 400),
    ("no model", "POST", "/v1/chat/completions", "auth", b'{"messages": []}', 400),
    ("bad embeddings input", "POST", "/v1/embeddings", "auth", b'{"model": "multilingual-e5-small", "input": []}', 400),
    ("too large", "POST", "/v1/embeddings", "auth", b'{"input": "' + b"x" * (2 << 20) + b'"}', 413),
], ids=lambda c: c[0])
def test_every_error_body_has_the_convention_shape(gateway, keys, case):
    _, method, path, headers, body, status = case
    if headers == "auth":
        headers = {"Authorization": f"Bearer {keys['member']}"}
    if body is not None:
        headers = {**headers, "Content-Type": "application/json"}
    r = httpx.request(method, f"{gateway.url}{path}", headers=headers, content=body, timeout=20)
    assert_error_body(r, status)


def test_unauthenticated_requests_are_counted(gateway):
    before = harness.metrics(gateway)["sovereign_unauthenticated_total"]
    r = httpx.get(f"{gateway.url}/v1/models")
    assert r.status_code == 401
    assert harness.metrics(gateway)["sovereign_unauthenticated_total"] == before + 1
