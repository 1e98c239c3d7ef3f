"""A newcomer's first program (scripts/newcomer-check python): the seven tasks of issue 49
against `sovereign demo`, with the package installed as the README says.

Environment: SOVEREIGN_BASE_URL and SOVEREIGN_API_KEY (the member key: read by the library
itself), NEWCOMER_ADMIN_KEY, NEWCOMER_AUDITOR_KEY, NEWCOMER_PDF (a PDF to upload),
NEWCOMER_JOURNAL_PUBKEY (the demo's journal-signing.key.pub)."""

import os
import uuid

import sovereign_gateway as sg
from sovereign_gateway import Sovereign

ARABIC = "ما هي عاصمة المملكة العربية السعودية؟"
QUESTION = "ما هي مدة الاحتفاظ بسجلات العملاء؟"


def main() -> None:
    member = Sovereign()  # SOVEREIGN_BASE_URL, SOVEREIGN_API_KEY
    admin = Sovereign(api_key=os.environ["NEWCOMER_ADMIN_KEY"])
    auditor = Sovereign(api_key=os.environ["NEWCOMER_AUDITOR_KEY"])

    # 1. An Arabic question to auto-router, and where it was served.
    reply = member.chat.completions.create(model="auto-router", messages=[{"role": "user", "content": ARABIC}])
    assert reply.choices[0].message.content
    assert reply.data_residency == "sa-riyadh-1" and reply.sovereign_id == "demo-riyadh-1", reply.sovereignty
    assert reply.route_policy and reply.audit_trace_id
    print(f"1 chat: {reply.model} in {reply.data_residency} by {reply.route_policy}")

    # 2. Streaming: the metadata before the first chunk, the text from the chunks.
    stream = member.chat.completions.create(
        model="auto-router", messages=[{"role": "user", "content": ARABIC}], stream=True)
    assert stream.data_residency == "sa-riyadh-1"
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text
    print(f"2 stream: {len(text)} characters")

    # 3. Embeddings.
    emb = member.embeddings.create(model="multilingual-e5-small", input=["مرحبا", "hello"])
    assert len(emb.data) == 2 and len(emb.data[0].embedding) > 0 and emb.sovereign_id == "demo-riyadh-1"
    print(f"3 embeddings: {len(emb.data)} x {len(emb.data[0].embedding)}")

    # 4. Upload a document (a str path) and ask a question with citations.
    collection = f"newcomer-{uuid.uuid4().hex[:8]}"
    doc = member.documents.upload(os.environ["NEWCOMER_PDF"], collection=collection)
    result = member.rag.query(QUESTION, collection=collection, top_k=2)
    assert result.citations and result.citations[0].document_id == doc.id, result
    print(f"4 rag: cited {result.citations[0].document_id} page {result.citations[0].page}, "
          f"confidence {result.confidence:.2f}")
    member.documents.delete(doc.id)

    # 5. The journal: a page of entries, then the export verified offline against the pinned key.
    page = auditor.activity.query(limit=5)
    assert page.data
    auditor.journal.create_checkpoint()
    export = auditor.activity.export("jsonl")
    checkpoints = auditor.journal.list_checkpoints()
    with open(os.environ["NEWCOMER_JOURNAL_PUBKEY"]) as f:
        public_key = f.read().strip()
    verified = sg.verify_journal_export(export, checkpoints, public_key=public_key)
    assert verified.ok, verified.problem
    print(f"5 journal: {len(page.data)} listed, {verified.entries} verified offline, "
          f"{verified.checkpoints_checked} checkpoint(s) matched")

    # 6. Typed errors: a member may not read the journal; a card number is a guardrail refusal.
    try:
        member.journal.list_checkpoints()
        raise AssertionError("a member read the journal")
    except sg.PermissionDeniedError as e:
        assert e.status == 403
    try:
        member.chat.completions.create(
            model="auto-router", messages=[{"role": "user", "content": "card 4111 1111 1111 1111"}])
        raise AssertionError("the card number passed")
    except sg.GuardrailViolationError as e:
        assert isinstance(e, sg.BadRequestError) and e.code == "pii_detected"
    print("6 errors: PermissionDeniedError (403), GuardrailViolationError (a BadRequestError)")

    # 7. Admin: create a key, use it, revoke it.
    key = admin.admin.keys.create("demo", "member", name=collection)
    user = Sovereign(api_key=key.key, max_retries=0)
    assert user.models.list().data
    admin.admin.keys.revoke(key.id)
    try:
        user.models.list()
        raise AssertionError("a revoked key worked")
    except sg.AuthenticationError:
        pass
    print(f"7 admin: key {key.id} created, used, revoked")
    print("newcomer: 7 of 7 tasks done")


if __name__ == "__main__":
    main()
