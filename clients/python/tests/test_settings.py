"""A client of the gateway uses only its own settings (SOVEREIGN_* or arguments), never what the
wrapped openai SDK would read from OPENAI_* (issue 49, bug 1), and fails clearly without a key."""

from __future__ import annotations

import httpx2
import openai
import pytest

import sovereign_gateway as sg

OPENAI_SECRET = "sk-openai-must-never-leave"


@pytest.fixture
def openai_environment(monkeypatch):
    monkeypatch.delenv("SOVEREIGN_API_KEY", raising=False)
    monkeypatch.delenv("SOVEREIGN_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_SECRET)
    monkeypatch.setenv("OPENAI_ADMIN_KEY", OPENAI_SECRET + "-admin")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai.invalid/v1")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-openai")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-openai")
    monkeypatch.setenv("OPENAI_WEBHOOK_SECRET", "whsec_openai")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", f"Authorization: Bearer {OPENAI_SECRET}\nX-From-OpenAI: 1")


def _recording(seen: list) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"object": "list", "data": []})

    return httpx2.Client(transport=httpx2.MockTransport(handler))


@pytest.mark.parametrize("make", [sg.Sovereign, sg.AsyncSovereign])
def test_no_key_fails_naming_sovereign_api_key(openai_environment, make):
    with pytest.raises(openai.OpenAIError) as e:
        make(base_url="http://gw.test")
    assert "SOVEREIGN_API_KEY" in str(e.value)
    assert "OPENAI_API_KEY" not in str(e.value).replace("OPENAI_*", "")


def test_no_base_url_fails_naming_sovereign_base_url(openai_environment):
    with pytest.raises(openai.OpenAIError) as e:
        sg.Sovereign(api_key="sk-sov-x")
    assert "SOVEREIGN_BASE_URL" in str(e.value)


def test_requests_carry_only_the_sovereign_settings(openai_environment, monkeypatch):
    monkeypatch.setenv("SOVEREIGN_API_KEY", "sk-sov-mine")
    monkeypatch.setenv("SOVEREIGN_BASE_URL", "http://gw.test")
    seen: list = []
    client = sg.Sovereign(http_client=_recording(seen))
    client.models.list()
    client.with_options(timeout=5).models.list()
    assert len(seen) == 2
    for request in seen:
        assert request.url.host == "gw.test"
        assert request.headers["authorization"] == "Bearer sk-sov-mine"
        sent = " ".join(f"{k}: {v}" for k, v in request.headers.items()).lower()
        for leaked in (OPENAI_SECRET, "org-openai", "proj-openai", "x-from-openai"):
            assert leaked not in sent, (leaked, sent)
    assert client.webhook_secret is None and client.admin_api_key is None


def test_arguments_still_win(openai_environment):
    seen: list = []
    client = sg.Sovereign(base_url="http://gw.test", api_key="sk-sov-arg", organization="org-mine",
                          http_client=_recording(seen))
    client.models.list()
    assert seen[0].headers["authorization"] == "Bearer sk-sov-arg"
    assert seen[0].headers["openai-organization"] == "org-mine"
