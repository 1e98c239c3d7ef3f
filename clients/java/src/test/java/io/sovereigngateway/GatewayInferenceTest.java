package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Chat (whole, async, streamed), embeddings, models, residency and guardrail refusals, against `sovereign demo`. */
class GatewayInferenceTest {
    static DemoGateway gw;

    @BeforeAll
    static void up() {
        gw = DemoGateway.get();
    }

    static final String ARABIC_PROMPT = "ما هي عاصمة المملكة العربية السعودية؟ أجب بجملة واحدة.";

    @Test
    void streamedArabicAnswerHasSovereigntyBeforeTheFirstChunk() {
        ChatCompletionRequest req = ChatCompletionRequest.builder().model("auto-router").addUserMessage(ARABIC_PROMPT).build();
        List<String> parts = new ArrayList<>();
        try (ChatCompletionStream stream = gw.member().chat().stream(req)) {
            Sovereignty s = stream.sovereignty(); // before any chunk is read
            assertEquals("sa-riyadh-1", s.dataResidency());
            assertNotNull(s.routePolicy());
            assertFalse(s.routePolicy().isEmpty());
            assertEquals("demo-riyadh-1", s.sovereignId());
            assertNotNull(s.auditTraceId());
            assertEquals("", stream.textSoFar());
            for (ChatCompletionChunk c : stream) {
                parts.add(c.content());
            }
            assertTrue(stream.isDone(), "the stream ended with [DONE]");
            String text = String.join("", parts);
            assertFalse(text.isBlank(), "the chunks carry text");
            assertEquals(text, stream.textSoFar());
        }
        assertTrue(parts.size() > 1, "more than one chunk: " + parts.size());
    }

    @Test
    void wholeCompletionWithRoutingHintsAndAsync() throws Exception {
        ChatCompletionRequest req = ChatCompletionRequest.builder().model("auto-router")
                .addUserMessage("Say hello in one short sentence.").routing(Routing.create().profile("cost")).maxTokens(32).build();
        ChatCompletion c = gw.member().chat().create(req);
        assertFalse(c.content().isBlank());
        assertNotNull(c.sovereignty().routePolicy());
        assertNotNull(c.sovereignty().dataResidency());
        assertEquals("demo-riyadh-1", c.sovereignty().sovereignId());
        assertNotNull(c.usage());
        assertTrue(c.usage().totalTokens() > 0);

        ChatCompletionRequest pref = ChatCompletionRequest.builder().model("auto-router")
                .addUserMessage("Name a colour.").routingPreference("performance").build();
        ChatCompletion a = gw.member().chat().createAsync(pref).get(30, TimeUnit.SECONDS);
        assertFalse(a.content().isBlank());
        assertNotNull(a.sovereignty().auditTraceId());

        BadRequestException bad = assertThrows(BadRequestException.class, () -> gw.member().chat().create(
                ChatCompletionRequest.builder().model("auto-router").addUserMessage("x").routingPreference("fastest").build()));
        assertEquals("routing_preference", bad.param());
    }

    @Test
    void sensitiveDataToTheCloudModelIsAResidencyError() {
        ResidencyException byHeader = assertThrows(ResidencyException.class, () -> gw.member().chat().create(
                ChatCompletionRequest.builder().model("qwen2.5-coder-32b").addUserMessage("Refactor this function.")
                        .dataClassification("sensitive").build()));
        assertEquals(451, byHeader.status());
        assertEquals("sensitive_requires_local", byHeader.code());
        assertEquals("sovereignty_error", byHeader.type());
        assertNotNull(byHeader.auditTraceId());

        ResidencyException byBody = assertThrows(ResidencyException.class, () -> gw.member().chat().stream(
                ChatCompletionRequest.builder().model("qwen2.5-coder-32b").addUserMessage("Refactor this function.")
                        .routing(Routing.create().classification("sensitive")).build()));
        assertEquals("sensitive_requires_local", byBody.code());
    }

    @Test
    void cardNumberIsAGuardrailViolationNotRetried() {
        String actor = "java-guardrail-" + UUID.randomUUID();
        SovereignClient member = SovereignClient.builder().baseUrl(gw.baseUrl).apiKey(gw.memberKey).maxRetries(2).build();
        GuardrailViolationException e = assertThrows(GuardrailViolationException.class, () -> member.chat().create(
                ChatCompletionRequest.builder().model("llama-3.2-3b-instruct")
                        .addUserMessage("Charge my card 4111 1111 1111 1111 please.").user(actor).header("X-Actor-ID", actor).build()));
        assertEquals("pii_detected", e.code());
        assertEquals(400, e.status());
        assertNotNull(e.auditTraceId());
        // exactly one attempt reached the journal
        List<JsonObject> entries = new ArrayList<>();
        gw.admin().activity().iterate(ActivityQuery.all().actorId(actor)).forEach(entries::add);
        assertEquals(1, entries.size(), "journal entries for " + actor + ": " + entries);
        assertEquals("blocked", entries.get(0).getString("status"));
        assertEquals(e.auditTraceId(), entries.get(0).getString("request_id"));
    }

    @Test
    void modelsCarryFamilyLanguagesRegion() {
        List<Model> models = gw.member().models().list();
        Model jais = models.stream().filter(m -> m.id().equals("jais-30b-chat")).findFirst().orElseThrow();
        assertTrue(jais.languages().contains("ar"), jais.toString());
        assertEquals("sa-riyadh-1", jais.region());
        assertNotNull(jais.family());
        Model qwen = gw.member().models().retrieve("qwen2.5-coder-32b");
        assertEquals("eu-frankfurt-1", qwen.region());
        NotFoundException nf = assertThrows(NotFoundException.class, () -> gw.member().models().retrieve("no-such-model"));
        assertEquals(404, nf.status());
    }

    @Test
    void embeddingsCarrySovereignty() {
        EmbeddingResponse r = gw.member().embeddings().create(
                EmbeddingRequest.of("multilingual-e5-small-q4", "سياسة الاحتفاظ بالسجلات", "record retention"));
        assertEquals(2, r.vectors().size());
        assertEquals(384, r.vectors().get(0).length);
        assertEquals("demo-riyadh-1", r.sovereignty().sovereignId());
        assertNotNull(r.sovereignty().auditTraceId());
    }
}
