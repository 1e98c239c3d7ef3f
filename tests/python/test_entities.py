"""Issue 50 through the real binary: a library of look-alike organisations (an Arabic bank and an
English one with the same topics and different figures, each the other's distractor). A question
that names one of them in the other script (transliterated, or translated through the aliases
given at upload) cites that organisation's paragraph first; a question about an organisation the
library does not hold is answered with a lower confidence than one it holds."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

import harness

E5 = "multilingual-e5-small-q4"

# The tuning part of the entity evaluation (host/retrieval/eval/entities/tune): before the entity
# rule, the English question about the Arabic bank cited the English bank's card paragraph first.
WEFAQ = """بنك الوفاق — شروط الخدمات المصرفية للأفراد

تنفذ الحوالات الدولية المقدمة إلى بنك الوفاق قبل الساعة الثانية عشرة ظهراً في يوم العمل نفسه، وما يصل بعد ذلك ينفذ في يوم العمل التالي.

تبلغ رسوم إصدار بطاقة مدى بديلة عن البطاقة المفقودة أو المسروقة 25 ريالاً، وتسلم البطاقة الجديدة خلال ثلاثة أيام عمل.

يمنح البنك التمويل الشخصي بحد أقصى 300,000 ريال، وتصل مدة السداد إلى ست سنوات.

يصنف الحساب راكداً إذا لم يجر العميل عليه أي عملية لمدة ستة أشهر متتالية.
"""

NORTHGATE = """Northgate Bank — Retail Banking Terms

International transfers submitted to Northgate Bank before 2:30 pm are processed on the same business day; transfers received after that time leave the next business day.

A lost or stolen debit card is replaced for a fee of 35 SAR, and the new card is delivered within five working days.

Personal loans are granted up to 250,000 SAR, repayable over at most five years.

An account with no transaction made by the customer for 12 consecutive months is classified as dormant.
"""


class Library:
    def __init__(self, gateway, key: str):
        self.http = httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {key}"},
                                 timeout=120)
        self.collection = "ent-" + uuid.uuid4().hex[:12]

    def upload(self, filename: str, text: str, metadata: dict | None = None) -> str:
        fields = {"collection": self.collection}
        if metadata is not None:
            fields["metadata"] = json.dumps(metadata)
        r = self.http.post("/v1/documents/upload?wait=true", data=fields,
                           files={"file": (filename, text.encode(), "text/plain")})
        assert r.status_code == 201, r.text[:500]
        return r.json()["id"]

    def ask(self, question: str) -> dict:
        r = self.http.post("/v1/rag/query",
                           json={"query": question, "collection": self.collection, "top_k": 3})
        assert r.status_code == 200, r.text[:500]
        result = r.json()
        assert result["model"] == E5
        assert result["citations"], result
        return result


# Chunks of about one paragraph, so that each topic of one bank is a distractor for the other's.
PARAGRAPH_CHUNKS = harness.UNLIMITED + "\n[documents]\nchunk_tokens = 40\nchunk_overlap_tokens = 0\n"


@pytest.fixture(scope="module")
def banks(sim, keys, tmp_path_factory):
    """The two banks: the Arabic one titled in Arabic with a translated name as an alias, the
    English one with no alias (its Arabic transliteration has to be matched without help)."""
    config = harness.gateway_config(harness.fleet_models(sim.url), keys["config"], extra=PARAGRAPH_CHUNKS)
    gateway = harness.start_gateway(config, tmp_path_factory.mktemp("entities-gw"))
    lib = Library(gateway, keys["member"])
    lib.wefaq = lib.upload("terms.txt", WEFAQ, {"title": "بنك الوفاق", "aliases": "Dawn Trust Bank"})
    lib.northgate = lib.upload("retail-terms.txt", NORTHGATE, {"title": "Northgate Bank"})
    yield lib
    lib.http.close()
    gateway.kill()


def first(result: dict) -> dict:
    return result["citations"][0]


def test_an_english_question_about_the_arabic_bank_cites_it_first(banks):
    for question in ("What does Al-Wifaq Bank charge to replace a lost card?",
                     "How much is a replacement card at Alwefaq Bank?"):
        top = first(banks.ask(question))
        assert top["document_id"] == banks.wefaq, (question, top["text"][:80])
        assert "25" in top["text"], top["text"]


def test_an_arabic_question_about_the_english_bank_cites_it_first(banks):
    for question in ("كم رسوم استبدال البطاقة المسروقة في بنك نورثغيت؟",
                     "ما الحد الأقصى للقرض الشخصي لدى نورث غيت؟"):
        top = first(banks.ask(question))
        assert top["document_id"] == banks.northgate, (question, top["text"][:80])


def test_a_translated_name_given_as_an_alias_finds_its_document(banks):
    top = first(banks.ask("What is the personal loan limit at Dawn Trust Bank?"))
    assert top["document_id"] == banks.wefaq, top["text"][:80]
    assert "300,000" in top["text"], top["text"]


def test_a_bank_the_library_does_not_hold_gets_a_lower_confidence(banks):
    held = banks.ask("What does Northgate Bank charge to replace a stolen card?")["confidence"]
    for question in ("What does Eastbridge Bank charge to replace a stolen card?",
                     "كم رسوم استبدال البطاقة المسروقة في بنك الشروق؟"):
        missing = banks.ask(question)["confidence"]
        assert missing < 0.5 * held, (question, missing, held)
