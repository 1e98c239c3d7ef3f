"""Mutual TLS (issue 16) through the real binary: one `sovereign demo --tls` gateway for the module,
reached with the official `openai` SDK and plain httpx over HTTPS. Client certificates as
identities (alone, beside a key, with their roles), what the journal records about them, the
handshake refusing revoked / expired / wrong-usage / untrusted certificates, the certificate
identity admin API, team caps and budgets charged to a certificate's team, hot reload of the TLS
material (file changes and SIGHUP) and garbage on the TLS port.

Client certificates are presented through an `ssl.SSLContext` passed as httpx's `verify=`
(`harness.tls_context`): httpx 0.28 silently drops `cert=` when `verify` is a path string.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import httpx
import openai
import pytest

import harness

CHAT = {"model": "jais-30b-chat", "messages": [{"role": "user", "content": "Say something please"}]}
PLACEHOLDER = "mtls"  # the SDK insists on an api_key; beside a mapped certificate it is ignored
CLIENTS = ("admin", "member", "auditor", "revoked", "expired")
DEMO_URI = "spiffe://demo.sovereign/team/demo/{}"


# ---------------------------------------------------------------------------------------------
# Certificates, read independently of the gateway (stdlib only).

def der_of(pem_path: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(pem_path.read_text())


def fingerprint(pem_path: Path) -> str:
    """What the journal's `cert_sha256` must be: sha256 of the certificate's DER."""
    return "sha256:" + hashlib.sha256(der_of(pem_path)).hexdigest()


def _tlv(buf: bytes, i: int) -> tuple[int, int, int]:
    """One DER element at `i`: (tag, start of its content, end of the element)."""
    tag, length = buf[i], buf[i + 1]
    i += 2
    if length & 0x80:
        n = length & 0x7F
        length = int.from_bytes(buf[i:i + n], "big")
        i += n
    return tag, i, i + length


def spki_sha256(pem_path: Path) -> str:
    """Hex SHA-256 of the certificate's SubjectPublicKeyInfo (DER), as `openssl x509 -pubkey |
    openssl pkey -pubin -outform DER | sha256sum` computes a key pin."""
    der = der_of(pem_path)
    _, cert_body, _ = _tlv(der, 0)
    _, tbs_body, tbs_end = _tlv(der, cert_body)
    fields, i = [], tbs_body
    while i < tbs_end:
        tag, _, end = _tlv(der, i)
        fields.append((tag, i, end))
        i = end
    if fields[0][0] == 0xA0:  # [0] version
        fields = fields[1:]
    _, start, end = fields[5]  # serial, signature, issuer, validity, subject, subjectPublicKeyInfo
    return hashlib.sha256(der[start:end]).hexdigest()


# ---------------------------------------------------------------------------------------------
# The gateway under test.

class Demo:
    def __init__(self, proc: harness.Proc, directory: Path):
        self.proc = proc
        self.dir = directory
        self.tls = directory / "tls"
        self.url = proc.url
        self.keys = proc.keys
        self.ca_pem = proc.ca_pem

    def cert(self, name: str) -> tuple[Path, Path]:
        """(certificate, key) files of a demo client (`member`, ...) or of the server (`server`)."""
        stem = "server" if name == "server" else f"client-{name}"
        return self.tls / f"{stem}.pem", self.tls / f"{stem}.key"

    def ctx(self, cert: str | tuple[Path, Path] | None = None, tls12: bool = False) -> ssl.SSLContext:
        pair = self.cert(cert) if isinstance(cert, str) else cert
        ctx = harness.tls_context(self.ca_pem, pair)
        if tls12:
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        return ctx

    def http(self, cert=None, key: str | None = None, **kwargs) -> httpx.Client:
        """Plain httpx over HTTPS, presenting `cert` and/or sending the bearer `key`."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, verify=self.ctx(cert, **kwargs), headers=headers, timeout=30)

    def sdk(self, cert=None, api_key: str = PLACEHOLDER) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=api_key, max_retries=0, timeout=30,
                             http_client=httpx.Client(verify=self.ctx(cert), timeout=30))

    def admin(self) -> httpx.Client:
        return self.http(key=self.keys["admin"])

    def metrics(self) -> dict[str, float]:
        return harness.metrics(self.proc)

    def journal(self) -> dict[str, dict]:
        """Every journal entry on disk, by request id (a torn last line is skipped)."""
        out = {}
        for segment in sorted((self.dir / "journal").glob("journal-*.jsonl")):
            for line in segment.read_text().splitlines():
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                out[e["request_id"]] = e
        return out

    def entry(self, request_id: str) -> dict:
        return harness.wait_for(lambda: self.journal().get(request_id), timeout=10,
                                what=f"the journal entry of {request_id}")

    def team_of(self, cert: str) -> tuple[str, str]:
        """Which (team, key id) a certificate-only request with `cert` lands in, per the journal."""
        with self.http(cert, key=PLACEHOLDER) as c:
            r = c.get("/v1/models")
        assert r.status_code == 200, r.text
        e = self.entry(r.headers["x-audit-trace-id"])
        return e["team_id"], e["key_id"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls-demo")
    p = harness.start_demo(directory, tls=True)
    assert p.url.startswith("https://"), p.url
    assert p.ca == directory / "tls" / "ca.pem" and p.ca_pem
    assert {"admin", "member", "auditor"} <= set(p.keys)
    yield Demo(p, directory)
    p.kill()


def new_team(a: httpx.Client, **fields) -> dict:
    r = a.post("/v1/admin/teams", json={"name": "tls-test", "plan": "enterprise", **fields})
    assert r.status_code == 201, r.text
    return r.json()


def pin(a: httpx.Client, team_id: str, pem_path: Path, role: str = "member", name: str = "pinned") -> dict:
    r = a.post("/v1/admin/cert-identities",
               json={"team_id": team_id, "name": name, "role": role, "certificate": pem_path.read_text()})
    assert r.status_code == 201, r.text
    return r.json()


def cleanup(a: httpx.Client, *, identities=(), teams=()) -> None:
    """Deletes what a test created (already-deleted ones are fine)."""
    for i in identities:
        assert a.delete(f"/v1/admin/cert-identities/{i}").status_code in (200, 404)
    for t in teams:
        assert a.delete(f"/v1/admin/teams/{t}").status_code in (200, 404)


def error_of(r: httpx.Response, status: int, type_: str, code: str | None = None, param: str | None = None):
    assert r.status_code == status, (r.status_code, r.text)
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert error["type"] == type_ and error["message"], error
    if code is not None:
        assert error["code"] == code, error
    if param is not None:
        assert error["param"] == param, error
    return error


def refused_in_handshake(demo: Demo, cert, tls12: bool = False) -> str:
    """Asserts a request presenting `cert` never gets an HTTP answer; returns the TLS error text.
    With TLS 1.3 the client learns of the refusal on its first read (the server's alert), with
    TLS 1.2 during the handshake itself."""
    with demo.http(cert, key=demo.keys["member"], tls12=tls12) as c:
        with pytest.raises(httpx.TransportError) as e:
            c.get("/v1/models")
    if tls12:
        assert isinstance(e.value, httpx.ConnectError), repr(e.value)
    return str(e.value).lower()


# ---------------------------------------------------------------------------------------------
# 1, 2: certificates as credentials, and the journal.

def test_certificate_alone_serves_chat_streams_embeddings_and_models(demo):
    sdk = demo.sdk("member")
    models = {m.id: m.to_dict() for m in sdk.models.list()}
    assert "jais-30b-chat" in models
    embedding = next(i for i, m in models.items() if m.get("kind") == "embedding")

    answer = sdk.chat.completions.create(**CHAT)
    assert answer.choices[0].message.content
    assert answer.usage.total_tokens > 0

    chunks = list(sdk.chat.completions.create(**CHAT, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text

    emb = sdk.embeddings.create(model=embedding, input="hello over mutual TLS")
    assert len(emb.data) == 1 and len(emb.data[0].embedding) > 0
    assert any(x != 0 for x in emb.data[0].embedding)

    # The same over plain httpx, no Authorization header at all.
    with demo.http("member") as c:
        r = c.post("/v1/chat/completions", json=CHAT)
        assert r.status_code == 200, r.text
        assert r.http_version == "HTTP/1.1"
        # The team's plan limits apply to a certificate as to a key (enterprise: 6000 a minute).
        assert r.headers["x-ratelimit-limit"] == "6000" and "x-ratelimit-remaining" in r.headers
        assert c.get("/v1/models/jais-30b-chat").json()["id"] == "jais-30b-chat"

    # Without a certificate, the bearer key over HTTPS works as before.
    keyed = demo.sdk(None, api_key=demo.keys["member"])
    assert keyed.chat.completions.create(**CHAT).choices[0].message.content
    # Neither: 401, and the SDK's exception.
    with demo.http() as c:
        error_of(c.post("/v1/chat/completions", json=CHAT), 401, "authentication_error")
        error_of(c.get("/v1/models"), 401, "authentication_error")
    with pytest.raises(openai.AuthenticationError):
        demo.sdk(None, api_key=PLACEHOLDER).models.list()


@pytest.mark.skipif(not shutil.which("curl"), reason="needs curl for HTTP/2 (httpx's needs the h2 package)")
def test_certificate_identity_over_http2(demo, tmp_path):
    """ALPN h2: every stream of the connection carries the connection's certificate."""
    ca = tmp_path / "ca.pem"
    ca.write_text(demo.ca_pem)
    cert, key = demo.cert("member")
    out = subprocess.run(["curl", "-sS", "--http2", "--cacert", str(ca), "--cert", str(cert), "--key", str(key),
                          "-D", "-", f"{demo.url}/v1/models", "-o", "/dev/null",
                          f"{demo.url}/v1/models", "-o", "/dev/null"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    lines = [ln.strip() for ln in out.stdout.splitlines()]
    assert [ln for ln in lines if ln.startswith("HTTP/")] == ["HTTP/2 200"] * 2, out.stdout
    ids = [ln.split(":", 1)[1].strip() for ln in lines if ln.lower().startswith("x-audit-trace-id:")]
    assert len(ids) == 2
    for request_id in ids:
        e = demo.entry(request_id)
        assert e["auth"] == "mtls" and e["cert_sha256"] == fingerprint(cert), e


def test_journal_records_how_each_request_authenticated(demo):
    member_fp = fingerprint(demo.cert("member")[0])
    sdk = demo.sdk("member")
    chat = sdk.chat.completions.with_raw_response.create(**CHAT)
    chat_id = chat.headers["x-audit-trace-id"]
    assert chat.parse().id == chat_id
    stream = sdk.chat.completions.with_raw_response.create(**CHAT, stream=True)
    stream_id = stream.headers["x-audit-trace-id"]
    assert list(stream.parse())
    models = sdk.models.with_raw_response.list()
    models_id = models.headers["x-audit-trace-id"]

    mtls = [demo.entry(i) for i in (chat_id, stream_id, models_id)]
    assert [e["action"] for e in mtls] == ["chat.completions", "chat.completions", "models.list"]
    cid = mtls[0]["key_id"]
    assert cid.startswith("cid_"), mtls[0]
    for e in mtls:
        assert e["auth"] == "mtls" and e["cert_sha256"] == member_fp, e
        assert e["key_id"] == cid and e["actor_id"] == cid and e["team_id"] == "demo", e
        assert e["status"] == "success"

    # Key only: no certificate fingerprint.
    with demo.http(key=demo.keys["member"]) as c:
        r = c.post("/v1/chat/completions", json=CHAT)
    assert r.status_code == 200
    e = demo.entry(r.headers["x-audit-trace-id"])
    assert e["auth"] == "key" and e["key_id"].startswith("key_") and e.get("cert_sha256") is None, e

    # Key beside the same team's certificate: the key is the caller, the certificate is recorded.
    with demo.http("member", key=demo.keys["member"]) as c:
        r = c.post("/v1/chat/completions", json=CHAT)
    assert r.status_code == 200
    both = demo.entry(r.headers["x-audit-trace-id"])
    assert both["auth"] == "key" and both["key_id"] == e["key_id"] and both["cert_sha256"] == member_fp, both

    # Another certificate: another identity, another fingerprint.
    with demo.http("admin", key=PLACEHOLDER) as c:
        r = c.get("/v1/models")
    admin_e = demo.entry(r.headers["x-audit-trace-id"])
    assert admin_e["auth"] == "mtls" and admin_e["cert_sha256"] == fingerprint(demo.cert("admin")[0])
    assert admin_e["key_id"].startswith("cid_") and admin_e["key_id"] != cid

    # The query API shows the same facts as the file.
    with demo.admin() as a:
        found = a.post("/v1/activity/logs", json={"request_id": chat_id}).json()["data"]
        r = a.post("/v1/activity/logs", json={"request_id": chat_id, "format": "csv"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv"), r.text
    header, *rows = list(csv.reader(io.StringIO(r.text)))
    # Appended, so older readers' columns stay: auth and cert_sha256 (issue 16), replica (17).
    assert header[-3:] == ["auth", "cert_sha256", "replica"], header
    assert len(rows) == 1 and rows[0][-3:-1] == ["mtls", member_fp], rows
    assert len(found) == 1 and found[0]["auth"] == "mtls" and found[0]["cert_sha256"] == member_fp, found

    # The chain with the new fields still verifies, with both verifiers.
    rust, python = harness.verify_journal(demo.dir / "journal")
    assert rust.returncode == 0, rust.stdout + rust.stderr
    assert python.returncode == 0, python.stdout + python.stderr
    assert rust.stdout.startswith("OK demo-riyadh-1:") and python.stdout.startswith("OK demo-riyadh-1:")


# ---------------------------------------------------------------------------------------------
# 3: the handshake refuses.

def test_revoked_expired_and_server_only_certificates_fail_the_handshake(demo):
    before = demo.metrics()["sovereign_tls_handshake_failures_total"]
    reasons = {"revoked": "revoked", "expired": "expired",
               # The server's certificate, from the trusted CA, has serverAuth usage only.
               "server": "unsupported certificate"}
    for name, reason in reasons.items():
        for tls12 in (False, True):
            text = refused_in_handshake(demo, name, tls12=tls12)
            assert reason in text, (name, tls12, text)
    harness.wait_for(lambda: demo.metrics()["sovereign_tls_handshake_failures_total"] >= before + 6,
                     what="six handshake failures to be counted")
    # The revoked certificate is mapped (as member): the handshake is what refuses it, even with a key.
    with demo.admin() as a:
        declared = {c["name"] for c in a.get("/v1/admin/cert-identities").json()["data"]}
    assert {"demo-revoked", "demo-expired"} <= declared
    # And the gateway serves on.
    with demo.http("member") as c:
        assert c.post("/v1/chat/completions", json=CHAT).status_code == 200


@pytest.mark.skipif(not shutil.which("openssl"), reason="needs the openssl command to make a certificate")
def test_a_self_signed_certificate_claiming_a_mapped_identity_is_refused(demo, tmp_path):
    """A certificate no trusted CA signed, naming the member's SPIFFE ID, its key even pinned as
    admin through the API: no mapping makes an unverified certificate a credential."""
    cert, key = tmp_path / "impostor.pem", tmp_path / "impostor.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "30", "-subj", "/CN=impostor",
                    "-addext", f"subjectAltName=URI:{DEMO_URI.format('member')}",
                    "-addext", "basicConstraints=critical,CA:FALSE",
                    "-addext", "extendedKeyUsage=clientAuth"],
                   check=True, capture_output=True)
    with demo.admin() as a:
        identity = pin(a, "demo", cert, role="admin", name="impostor")
        try:
            for tls12 in (False, True):
                text = refused_in_handshake(demo, (cert, key), tls12=tls12)
                assert "unknown ca" in text or "certificate" in text, text
        finally:
            cleanup(a, identities=[identity["id"]])
    with demo.http("member") as c:
        assert c.get("/v1/models").status_code == 200


# ---------------------------------------------------------------------------------------------
# 4, 5: roles, and a key beside a certificate.

def test_auditor_and_admin_certificates_carry_their_roles(demo):
    with pytest.raises(openai.PermissionDeniedError):
        demo.sdk("auditor").chat.completions.create(**CHAT)
    with demo.http("auditor", key=PLACEHOLDER) as c:
        error_of(c.post("/v1/chat/completions", json=CHAT), 403, "permission_error")
        error_of(c.post("/v1/embeddings", json={"model": "multilingual-e5-small", "input": "x"}), 403,
                 "permission_error")
        r = c.post("/v1/activity/logs", json={})
        assert r.status_code == 200, r.text
        assert r.json()["data"] and {e["team_id"] for e in r.json()["data"]} == {"demo"}
        r = c.get("/v1/admin/usage")
        assert r.status_code == 200, r.text
        error_of(c.get("/v1/admin/teams"), 403, "permission_error")
        error_of(c.get("/v1/admin/cert-identities"), 403, "permission_error")
    with demo.http("member") as c:
        error_of(c.get("/v1/admin/cert-identities"), 403, "permission_error")
        error_of(c.post("/v1/activity/logs", json={}), 403, "permission_error")

    with demo.http("admin") as c:
        assert c.get("/v1/admin/teams").status_code == 200
        r = c.get("/v1/admin/cert-identities")
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["object"] == "list"
        declared = {i["name"]: i for i in body["data"] if i["source"] == "config"}
        assert set(declared) == {f"demo-{n}" for n in CLIENTS}
        for n in CLIENTS:
            i = declared[f"demo-{n}"]
            assert i["id"].startswith("cid_") and i["object"] == "cert_identity" and i["team_id"] == "demo"
            assert i["match"] == {"kind": "uri", "value": DEMO_URI.format(n)}
            assert i["role"] == (n if n in ("admin", "auditor") else "member")
        # The admin certificate administers: a team made and deleted through it.
        team = new_team(c)
        assert c.delete(f"/v1/admin/teams/{team['id']}").json()["deleted"] is True


def test_a_key_beside_a_certificate_must_name_the_same_team(demo):
    with demo.admin() as a:
        other = new_team(a)
        try:
            other_key = a.post("/v1/admin/keys", json={"team_id": other["id"], "role": "member"}).json()
            revoked = a.post("/v1/admin/keys", json={"team_id": "demo", "role": "member"}).json()
            assert a.post(f"/v1/admin/keys/{revoked['id']}/revoke").status_code == 200

            # The other team's key works alone ...
            with demo.http(key=other_key["key"]) as c:
                assert c.post("/v1/chat/completions", json=CHAT).status_code == 200
            # ... but not beside the demo team's certificate.
            with demo.http("member", key=other_key["key"]) as c:
                error_of(c.post("/v1/chat/completions", json=CHAT), 403, "permission_error",
                         code="identity_mismatch")
                error_of(c.get("/v1/models"), 403, "permission_error", code="identity_mismatch")
            with pytest.raises(openai.PermissionDeniedError) as e:
                demo.sdk("member", api_key=other_key["key"]).chat.completions.create(**CHAT)
            assert e.value.code == "identity_mismatch"

            # A revoked key is not rescued by a good certificate.
            with demo.http("member", key=revoked["key"]) as c:
                error_of(c.get("/v1/models"), 401, "authentication_error")

            # Same team: the key is the caller, with the key's role (an auditor key beside the
            # member certificate may not chat).
            with demo.http("member", key=demo.keys["member"]) as c:
                r = c.post("/v1/chat/completions", json=CHAT)
                assert r.status_code == 200, r.text
                e = demo.entry(r.headers["x-audit-trace-id"])
                assert e["auth"] == "key" and e["key_id"].startswith("key_")
            with demo.http("member", key=demo.keys["auditor"]) as c:
                error_of(c.post("/v1/chat/completions", json=CHAT), 403, "permission_error")
            # A bearer value that is not a gateway key is a placeholder beside a certificate.
            with demo.http("member", key="anything-at-all") as c:
                assert c.post("/v1/chat/completions", json=CHAT).status_code == 200
        finally:
            cleanup(a, teams=[other["id"]])


# ---------------------------------------------------------------------------------------------
# 6: the certificate identity admin API.

def test_admin_api_pins_a_certificate_to_another_team_and_deletes_the_pin(demo):
    member_pem = demo.cert("member")[0]
    expected_pin = spki_sha256(member_pem)
    with demo.admin() as a:
        team = new_team(a)
        created = None
        try:
            assert demo.team_of("member")[0] == "demo"
            t0 = int(time.time())
            r = a.post("/v1/admin/cert-identities",
                       json={"team_id": team["id"], "name": "member-elsewhere", "role": "member",
                             "certificate": member_pem.read_text()})
            assert r.status_code == 201, r.text
            created = r.json()
            assert created["id"].startswith("cid_") and created["object"] == "cert_identity"
            assert (created["name"], created["team_id"], created["role"], created["source"]) == \
                   ("member-elsewhere", team["id"], "member", "api")
            assert created["match"] == {"kind": "spki_sha256", "value": expected_pin}
            assert t0 - 5 <= created["created_at"] <= time.time() + 5

            # The pin wins over the SAN URI: the member certificate now calls as the new team.
            sdk = demo.sdk("member")
            raw = sdk.chat.completions.with_raw_response.create(**CHAT)
            e = demo.entry(raw.headers["x-audit-trace-id"])
            assert (e["team_id"], e["key_id"], e["auth"]) == (team["id"], created["id"], "mtls"), e
            rows = a.get("/v1/admin/usage", params={"team_id": team["id"]}).json()["data"]
            assert rows and {row["key_id"] for row in rows} == {created["id"]}, rows

            # List (all, and by team), get.
            listed = a.get("/v1/admin/cert-identities", params={"team_id": team["id"]}).json()
            assert listed["object"] == "list" and listed["data"] == [created]
            everything = a.get("/v1/admin/cert-identities").json()["data"]
            assert created in everything and len(everything) >= len(CLIENTS) + 1
            assert a.get(f"/v1/admin/cert-identities/{created['id']}").json() == created
            error_of(a.get("/v1/admin/cert-identities/cid_nope"), 404, "invalid_request_error")

            # Duplicates: the same key pin however it is spelled, the URI the config already maps.
            for body in ({"spki_sha256": "sha256:" + expected_pin.upper()},
                         {"spki_sha256": expected_pin},
                         {"certificate": member_pem.read_text()},
                         {"uri": DEMO_URI.format("member")}):
                r = a.post("/v1/admin/cert-identities",
                           json={"team_id": "demo", "name": "dup", "role": "member", **body})
                error_of(r, 409, "invalid_request_error", code="certificate_already_mapped")

            # A config-declared identity is deleted in the config, not here; it stays in force.
            declared = next(i for i in everything if i["name"] == "demo-admin")
            error_of(a.delete(f"/v1/admin/cert-identities/{declared['id']}"), 409, "invalid_request_error",
                     code="declared_in_config")
            assert a.get(f"/v1/admin/cert-identities/{declared['id']}").status_code == 200

            # Delete: immediate, even on a connection that already served the pinned identity.
            with demo.http("member", key=PLACEHOLDER) as c:
                r = c.get("/v1/models")
                assert demo.entry(r.headers["x-audit-trace-id"])["team_id"] == team["id"]
                d = a.delete(f"/v1/admin/cert-identities/{created['id']}")
                assert d.status_code == 200, d.text
                assert d.json() == {"id": created["id"], "object": "cert_identity", "deleted": True}
                r = c.get("/v1/models")
                e = demo.entry(r.headers["x-audit-trace-id"])
                assert e["team_id"] == "demo" and e["key_id"] != created["id"], e
            assert demo.team_of("member")[0] == "demo"
            assert a.get(f"/v1/admin/cert-identities/{created['id']}").status_code == 404
            assert a.delete(f"/v1/admin/cert-identities/{created['id']}").status_code == 404
            assert a.get("/v1/admin/cert-identities", params={"team_id": team["id"]}).json()["data"] == []
        finally:
            cleanup(a, identities=[created["id"]] if created else [], teams=[team["id"]])


def test_admin_api_refuses_bad_input_and_non_admins(demo):
    base = {"team_id": "demo", "name": "x", "role": "member"}
    uri = "spiffe://demo.sovereign/team/demo/nobody"
    cases = [
        ({**base}, "uri"),  # no matcher
        ({**base, "uri": uri, "dns": "a.example"}, "uri"),  # two matchers
        ({**base, "uri": uri, "spki_sha256": "ab" * 32}, "uri"),
        ({**base, "spki_sha256": "abc"}, "spki_sha256"),
        ({**base, "spki_sha256": "zz" * 32}, "spki_sha256"),
        ({**base, "certificate": "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"},
         "certificate"),
        ({**base, "certificate": "not pem at all"}, "certificate"),
        ({**base, "uri": "no-colon-here"}, "uri"),
        ({**base, "dns": "not a name!"}, "dns"),
        ({**base, "team_id": "team_nope", "uri": uri}, "team_id"),
        ({**base, "role": "root", "uri": uri}, None),
        ({**base, "uri": uri, "colour": "red"}, None),
        ({"name": "x", "role": "member", "uri": uri}, None),  # no team
    ]
    with demo.admin() as a:
        for body, param in cases:
            error_of(a.post("/v1/admin/cert-identities", json=body), 400, "invalid_request_error", param=param)
        error_of(a.post("/v1/admin/cert-identities", content=b"{not json",
                        headers={"content-type": "application/json"}), 400, "invalid_request_error")
        assert a.get("/v1/admin/cert-identities", params={"teams": "demo"}).status_code == 400
        # Nothing was created by any of them.
        assert not [i for i in a.get("/v1/admin/cert-identities").json()["data"] if i["source"] == "api"]

        # A DNS matcher is stored lower-cased.
        r = a.post("/v1/admin/cert-identities", json={**base, "dns": "Client.Example.COM"})
        assert r.status_code == 201, r.text
        assert r.json()["match"] == {"kind": "dns", "value": "client.example.com"}
        try:
            error_of(a.post("/v1/admin/cert-identities", json={**base, "dns": "client.example.com"}), 409,
                     "invalid_request_error", code="certificate_already_mapped")
        finally:
            cleanup(a, identities=[r.json()["id"]])

    good = {**base, "uri": uri}
    for client in (demo.http(key=demo.keys["member"]), demo.http(key=demo.keys["auditor"]),
                   demo.http("member"), demo.http("auditor")):
        with client as c:
            error_of(c.post("/v1/admin/cert-identities", json=good), 403, "permission_error")
            error_of(c.get("/v1/admin/cert-identities"), 403, "permission_error")
    with demo.http() as c:
        error_of(c.post("/v1/admin/cert-identities", json=good), 401, "authentication_error")


def test_unknown_list_parameter_is_a_400_in_the_error_shape(demo):
    with demo.admin() as a:
        error_of(a.get("/v1/admin/cert-identities", params={"teams": "demo"}), 400, "invalid_request_error")
        error_of(a.get("/v1/admin/keys", params={"teams": "demo"}), 400, "invalid_request_error")


def test_the_config_team_cannot_be_deleted_through_the_api(demo):
    """Deleting it would take the config's keys and certificate identities with it until the
    next start; like them, it is removed in the file."""
    with demo.admin() as a:
        error = error_of(a.delete("/v1/admin/teams/demo"), 409, "invalid_request_error")
        assert error["code"] == "declared_in_config"
        assert a.get("/v1/admin/cert-identities", params={"team_id": "demo"}).json()["data"]


def test_deleting_a_team_drops_its_certificate_pins(demo):
    with demo.admin() as a:
        team = new_team(a)
        try:
            identity = pin(a, team["id"], demo.cert("member")[0])
            assert demo.team_of("member") == (team["id"], identity["id"])
            assert a.delete(f"/v1/admin/teams/{team['id']}").status_code == 200
            assert demo.team_of("member")[0] == "demo"
            assert a.get(f"/v1/admin/cert-identities/{identity['id']}").status_code == 404
        finally:
            cleanup(a, teams=[team["id"]])


# ---------------------------------------------------------------------------------------------
# 8: caps and budgets of the certificate's team.

def test_team_token_cap_is_charged_to_the_certificates_team(demo):
    with demo.admin() as a:
        team = new_team(a)
        identity = None
        try:
            identity = pin(a, team["id"], demo.cert("member")[0])
            sdk = demo.sdk("member")
            with demo.http("member") as c:
                # No cap yet: served (and the certificate's principal is now cached).
                first = c.post("/v1/chat/completions", json={**CHAT, "max_tokens": 8})
                assert first.status_code == 200, first.text
                used = first.json()["usage"]["total_tokens"]
                # A cap the team has already used up applies to the very next request.
                r = a.patch(f"/v1/admin/teams/{team['id']}", json={"token_cap_per_day": used})
                assert r.status_code == 200, r.text
                r = c.post("/v1/chat/completions", json={**CHAT, "max_tokens": 8})
                error = error_of(r, 429, "rate_limit_exceeded", code="tokens_per_day_exceeded")
                assert team["id"] in error["message"], error
                assert int(r.headers["retry-after"]) >= 1
                error_of(c.post("/v1/embeddings", json={"model": "multilingual-e5-small", "input": "x"}), 429,
                         "rate_limit_exceeded", code="tokens_per_day_exceeded")
            with pytest.raises(openai.RateLimitError) as e:
                sdk.chat.completions.create(**CHAT)
            assert e.value.code == "tokens_per_day_exceeded"
            # The demo team is untouched: its key, and the admin certificate, still work.
            with demo.http(key=demo.keys["member"]) as c:
                assert c.post("/v1/chat/completions", json=CHAT).status_code == 200
            with demo.http("admin") as c:
                assert c.get("/v1/models").status_code == 200
            # Raising the cap lets the certificate in again.
            assert a.patch(f"/v1/admin/teams/{team['id']}", json={"token_cap_per_day": None}).status_code == 200
            assert sdk.chat.completions.create(**CHAT, max_tokens=4).choices

            usage = a.get("/v1/admin/usage", params={"team_id": team["id"]}).json()
            assert {row["key_id"] for row in usage["data"]} == {identity["id"]}, usage
            assert usage["total"]["requests"] == 2
            assert usage["total"]["tokens_in"] + usage["total"]["tokens_out"] > used
            by_key = a.get("/v1/admin/usage", params={"key_id": identity["id"]}).json()
            assert by_key["total"] == usage["total"]
            assert {row["team_id"] for row in by_key["data"]} == {team["id"]}
        finally:
            cleanup(a, identities=[identity["id"]] if identity else [], teams=[team["id"]])


def test_team_budget_is_charged_to_the_certificates_team(demo):
    with demo.admin() as a:
        team = new_team(a, budget=0.000001)
        identity = None
        try:
            identity = pin(a, team["id"], demo.cert("member")[0])
            with demo.http("member") as c:
                r = c.post("/v1/chat/completions", json={**CHAT, "max_tokens": 50})
                error = error_of(r, 429, "insufficient_quota", code="insufficient_quota")
                assert team["id"] in error["message"], error
                with pytest.raises(openai.RateLimitError) as e:
                    demo.sdk("member").chat.completions.create(**CHAT, max_tokens=50)
                assert e.value.code == "insufficient_quota"
                # A raised budget applies at once, and the spend lands on the certificate's team.
                patched = a.patch(f"/v1/admin/teams/{team['id']}", json={"budget": 10.0})
                assert patched.status_code == 200, patched.text
                r = c.post("/v1/chat/completions", json={**CHAT, "max_tokens": 50})
                assert r.status_code == 200, r.text
            spend = harness.wait_for(
                lambda: (s := a.get(f"/v1/admin/teams/{team['id']}").json()["spend"])["spent"] > 0 and s,
                what="the certificate's request to be charged to its team")
            assert spend["reserved"] == 0 and spend["remaining"] < 10.0
            usage = a.get("/v1/admin/usage", params={"team_id": team["id"]}).json()
            assert usage["total"]["requests"] == 1
            assert usage["data"][0]["key_id"] == identity["id"]
        finally:
            cleanup(a, identities=[identity["id"]] if identity else [], teams=[team["id"]])


# ---------------------------------------------------------------------------------------------
# 9: hot reload.

def tls_counters(demo: Demo) -> dict[str, float]:
    return {k: v for k, v in demo.metrics().items() if k.startswith("sovereign_tls_")}


def replace_file(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def member_handshake_ok(demo: Demo) -> bool:
    try:
        with demo.http("member") as c:
            return c.get("/v1/models").status_code == 200
    except httpx.TransportError:
        return False


def test_a_broken_crl_keeps_the_old_material_until_it_is_fixed(demo):
    crl = demo.tls / "crl.pem"
    original = crl.read_bytes()
    before = tls_counters(demo)
    assert before["sovereign_tls_reload_failing"] == 0
    assert before["sovereign_tls_server_cert_not_after_seconds"] > time.time() + 86400
    try:
        replace_file(crl, b"-----BEGIN X509 CRL-----\ngarbage\n-----END X509 CRL-----\n" + os.urandom(64))
        harness.wait_for(lambda: (m := tls_counters(demo))["sovereign_tls_reload_failures_total"]
                         > before["sovereign_tls_reload_failures_total"]
                         and m["sovereign_tls_reload_failing"] == 1,
                         what="the broken CRL to be refused")
        # The previous material serves new handshakes: members in, the revoked certificate still out.
        with demo.http("member") as c:
            assert c.post("/v1/chat/completions", json=CHAT).status_code == 200
        assert "revoked" in refused_in_handshake(demo, "revoked")
        with demo.http(key=demo.keys["member"]) as c:
            assert c.get("/v1/models").status_code == 200
    finally:
        replace_file(crl, original)
    after = harness.wait_for(lambda: (m := tls_counters(demo))["sovereign_tls_reload_failing"] == 0 and m,
                             what="the fixed CRL to be loaded")
    assert after["sovereign_tls_reloads_total"] > before["sovereign_tls_reloads_total"]
    assert member_handshake_ok(demo)
    assert "revoked" in refused_in_handshake(demo, "revoked")


def test_sighup_reloads_the_material(demo):
    assert harness.catches_signal(demo.proc, signal.SIGHUP)
    before = tls_counters(demo)["sovereign_tls_reloads_total"]
    os.kill(demo.proc.proc.pid, signal.SIGHUP)
    harness.wait_for(lambda: tls_counters(demo)["sovereign_tls_reloads_total"] > before,
                     what="SIGHUP to reload the TLS material")
    assert demo.proc.proc.poll() is None
    assert tls_counters(demo)["sovereign_tls_reload_failing"] == 0
    sdk = demo.sdk("member")
    assert sdk.chat.completions.create(**CHAT).choices[0].message.content
    assert "expired" in refused_in_handshake(demo, "expired")


def test_a_reloaded_client_ca_governs_new_handshakes_only(demo):
    """The client CA file replaced by a bundle that does not hold the demo root: new handshakes
    with a demo client certificate are refused, connections already open keep serving, and
    clients without a certificate are unaffected; the original file restores it all."""
    ca = demo.tls / "ca.pem"
    original = ca.read_bytes()
    before = tls_counters(demo)["sovereign_tls_reloads_total"]
    with demo.http("member") as open_conn:
        assert open_conn.get("/v1/models").status_code == 200
        try:
            replace_file(ca, (demo.tls / "server.pem").read_bytes())
            harness.wait_for(lambda: tls_counters(demo)["sovereign_tls_reloads_total"] > before,
                             what="the new client CA to be loaded")
            assert tls_counters(demo)["sovereign_tls_reload_failing"] == 0
            assert "unknown ca" in refused_in_handshake(demo, "member")
            with demo.http(key=demo.keys["member"]) as c:
                assert c.post("/v1/chat/completions", json=CHAT).status_code == 200
            # The connection verified under the old material carries on.
            assert open_conn.get("/v1/models").status_code == 200
        finally:
            replace_file(ca, original)
        harness.wait_for(lambda: member_handshake_ok(demo), what="the original client CA to be back")
    assert tls_counters(demo)["sovereign_tls_reload_failing"] == 0


# ---------------------------------------------------------------------------------------------
# 10: garbage on the TLS port.

def read_until_closed(s: socket.socket, deadline_s: float = 10.0) -> bytes:
    s.settimeout(deadline_s)
    data = b""
    while True:
        try:
            chunk = s.recv(4096)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def test_garbage_on_the_tls_port_is_cut_off(demo):
    host, port = harness.host_port(demo.proc)
    before = tls_counters(demo)["sovereign_tls_handshake_failures_total"]
    # A record header, then a handshake message of a type that does not exist (0xff). Random
    # bytes there made the test flaky: one time in ~256 they begin a ClientHello whose announced
    # length never arrives, and the server rightly waits for it until the handshake deadline
    # (a timeout, not the failure counted below).
    # (Likewise the noise starts with a byte that is no TLS record type.)
    payloads = [b"GET /v1/models HTTP/1.1\r\nHost: localhost\r\n\r\n", b"\x00" + os.urandom(4095),
                b"\x16\x03\x01\x00\x10" + b"\xff" * 16]
    for payload in payloads:
        with socket.create_connection((host, port), timeout=10) as s:
            s.sendall(payload)
            answer = read_until_closed(s)
        assert not answer.startswith(b"HTTP/"), answer[:100]
        # At most a TLS alert record (content type 21), then the connection is closed.
        assert answer == b"" or answer[0] == 0x15, answer[:100]
    # Plain HTTP to the HTTPS port through a client.
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://{host}:{port}/v1/models", timeout=10)
    harness.wait_for(lambda: tls_counters(demo)["sovereign_tls_handshake_failures_total"]
                     >= before + len(payloads) + 1, what="the garbage handshakes to be counted")
    assert demo.proc.proc.poll() is None
    with demo.http("member") as c:
        assert c.post("/v1/chat/completions", json=CHAT).status_code == 200
    assert httpx.get(f"{demo.url}/healthz", verify=demo.ctx()).text == "ok"


def test_a_silent_client_is_cut_off_at_the_handshake_deadline(demo):
    """Connections that send nothing, or half a ClientHello, are closed after the handshake
    timeout (10 s by default), counted, and hold nobody else up meanwhile."""
    host, port = harness.host_port(demo.proc)
    before = tls_counters(demo)["sovereign_tls_handshake_timeouts_total"]
    silent = socket.create_connection((host, port))
    dribble = socket.create_connection((host, port))
    started = time.monotonic()
    try:
        dribble.sendall(b"\x16\x03\x01\x01\x00\x01")  # a handshake record that never completes
        with demo.http("member") as c:
            assert c.post("/v1/chat/completions", json=CHAT).status_code == 200
        for s in (silent, dribble):
            assert read_until_closed(s, deadline_s=30) == b""
        waited = time.monotonic() - started
        assert 5 <= waited <= 25, waited
    finally:
        silent.close()
        dribble.close()
    harness.wait_for(lambda: tls_counters(demo)["sovereign_tls_handshake_timeouts_total"] >= before + 2,
                     what="the handshake timeouts to be counted")
    assert member_handshake_ok(demo)



def test_webhooks_reach_an_mtls_receiver_with_a_private_ca(demo, tmp_path, sim):
    """Outbound TLS: `[webhooks] tls` trusts only the demo CA and presents a client certificate
    to a receiver that requires one."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(*demo.cert("server"))
    server.load_verify_locations(cadata=demo.ca_pem)
    server.verify_mode = ssl.CERT_REQUIRED
    receiver = harness.Receiver(tls=server)
    admin, admin_hash = harness.new_key()
    cert, key = demo.cert("admin")
    config = harness.gateway_config(
        harness.fleet_models(sim.url), {"admin": ("admin", admin_hash)},
        extra=harness.UNLIMITED + (
            "\n[webhooks]\nallow_loopback = true\n"
            f"tls = {{ ca = [{harness.toml_value(str(demo.tls / 'ca.pem'))}], "
            f"cert = {harness.toml_value(str(cert))}, key = {harness.toml_value(str(key))} }}\n"))
    gw = harness.start_gateway(config, tmp_path)
    try:
        with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {admin}"}, timeout=10) as a:
            sub = a.post("/v1/admin/webhooks", json={"url": receiver.url, "events": ["*"]})
            assert sub.status_code == 201, sub.text
            receiver.secret = sub.json()["secret"]
            assert a.post(f"/v1/admin/webhooks/{sub.json()['id']}/test").status_code == 202
        got = harness.wait_for(lambda: receiver.accepted(), what="the ping over mutual TLS")[0]
        assert got["signature_ok"] and got["json"]["event"] == "webhook.test"
        subject = dict(x[0] for x in got["peer_cert"]["subject"])
        assert subject["commonName"] == "demo-admin"
    finally:
        gw.kill()
        receiver.close()
