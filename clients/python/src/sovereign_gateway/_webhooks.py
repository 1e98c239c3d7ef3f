"""Standard Webhooks signature verification for the gateway's webhooks (docs/WEBHOOKS.md)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from datetime import datetime
from typing import Mapping, Optional, Union

from ._errors import WebhookVerificationError

__all__ = ["verify_webhook", "sign_webhook"]


def _header(headers: Mapping[str, str], name: str) -> str:
    for k, v in headers.items():
        if k.lower() == name:
            return v
    raise WebhookVerificationError(f"missing header {name}")


def _key(secret: Union[str, bytes]) -> bytes:
    if isinstance(secret, bytes):
        return secret
    try:
        return base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError) as e:
        raise WebhookVerificationError("the secret is not whsec_<base64>") from e


def sign_webhook(secret: Union[str, bytes], msg_id: str, timestamp: int, body: Union[bytes, str]) -> str:
    """The `v1,<base64>` signature of a message (what the gateway sends)."""
    payload = body.encode("utf-8") if isinstance(body, str) else body
    signed = f"{msg_id}.{timestamp}.".encode() + payload
    return "v1," + base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()).decode()


def verify_webhook(
    secret: Union[str, bytes],
    headers: Mapping[str, str],
    body: Union[bytes, str],
    *,
    tolerance: float = 300,
    now: Union[float, datetime, None] = None,
) -> None:
    """Checks `webhook-id`, `webhook-timestamp` (within ± `tolerance` seconds of `now`) and
    `webhook-signature` (any `v1,` entry may match) over `{id}.{timestamp}.{body}`, with the
    key base64-decoded from the `whsec_` secret. Raises `WebhookVerificationError` on failure;
    `body` must be the raw bytes received."""
    msg_id = _header(headers, "webhook-id")
    stamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    try:
        timestamp = int(stamp)
    except ValueError as e:
        raise WebhookVerificationError("webhook-timestamp is not an integer") from e
    current: Optional[float] = now.timestamp() if isinstance(now, datetime) else now
    if current is None:
        current = time.time()
    if abs(current - timestamp) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance")
    expected = sign_webhook(secret, msg_id, timestamp, body).split(",", 1)[1]
    for entry in signatures.split():
        version, _, given = entry.partition(",")
        if version == "v1" and hmac.compare_digest(expected.encode(), given.encode()):
            return
    raise WebhookVerificationError("no signature matches")
