"""TLS: the demo with `--tls`; a CA bundle and the member's client certificate and no API key."""

from __future__ import annotations

import pytest

from sovereign_gateway import APIConnectionError, Sovereign


def test_client_certificate_without_a_key(tls_demo, monkeypatch):
    monkeypatch.delenv("SOVEREIGN_API_KEY", raising=False)
    tls = tls_demo.data_dir / "tls"
    assert tls_demo.url.startswith("https://")
    client = Sovereign(
        base_url=tls_demo.url,
        ca_bundle=tls_demo.ca or tls / "ca.pem",
        client_cert=(tls / "client-member.pem", tls / "client-member.key"),
    )
    reply = client.chat.completions.create(model="llama-3.2-3b-instruct",
                                           messages=[{"role": "user", "content": "hello"}])
    assert reply.choices[0].message.content and reply.sovereign_id


def test_without_the_ca_the_connection_fails(tls_demo):
    tls = tls_demo.data_dir / "tls"
    client = Sovereign(base_url=tls_demo.url, api_key=tls_demo.keys["member"], max_retries=0,
                       client_cert=(tls / "client-member.pem", tls / "client-member.key"))
    with pytest.raises(APIConnectionError):
        client.models.list()
