"""Webhook signatures (Standard Webhooks), checked against a signature computed here."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

import pytest

from sovereign_gateway import WebhookVerificationError, verify_webhook

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
BODY = b'{"type":"budget.threshold","data":{"team_id":"t1"}}'


def _headers(body: bytes, stamp: int, msg_id: str = "msg_1") -> dict:
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    sig = base64.b64encode(hmac.new(key, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()).decode()
    return {"Webhook-Id": msg_id, "Webhook-Timestamp": str(stamp), "Webhook-Signature": f"v1,bm90LWl0 v1,{sig}"}


def test_a_valid_signature_verifies():
    now = int(time.time())
    assert verify_webhook(SECRET, _headers(BODY, now), BODY) is None
    assert verify_webhook(SECRET, _headers(BODY, now), BODY.decode(), now=now + 299) is None


def test_a_tampered_body_fails():
    now = int(time.time())
    with pytest.raises(WebhookVerificationError):
        verify_webhook(SECRET, _headers(BODY, now), BODY.replace(b"t1", b"t2"))


def test_an_old_timestamp_fails():
    old = int(time.time()) - 301
    with pytest.raises(WebhookVerificationError, match="tolerance"):
        verify_webhook(SECRET, _headers(BODY, old), BODY)


def test_a_missing_header_or_other_secret_fails():
    now = int(time.time())
    headers = _headers(BODY, now)
    del headers["Webhook-Signature"]
    with pytest.raises(WebhookVerificationError):
        verify_webhook(SECRET, headers, BODY)
    other = "whsec_" + base64.b64encode(b"x" * 32).decode()
    with pytest.raises(WebhookVerificationError):
        verify_webhook(other, _headers(BODY, now), BODY)
