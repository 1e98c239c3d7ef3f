package newcomer;

import io.sovereigngateway.ActivityPage;
import io.sovereigngateway.ActivityQuery;
import io.sovereigngateway.ApiKey;
import io.sovereigngateway.AuthenticationException;
import io.sovereigngateway.BadRequestException;
import io.sovereigngateway.ChatCompletion;
import io.sovereigngateway.ChatCompletionChunk;
import io.sovereigngateway.ChatCompletionRequest;
import io.sovereigngateway.ChatCompletionStream;
import io.sovereigngateway.Checkpoint;
import io.sovereigngateway.Citation;
import io.sovereigngateway.Document;
import io.sovereigngateway.EmbeddingRequest;
import io.sovereigngateway.EmbeddingResponse;
import io.sovereigngateway.GuardrailViolationException;
import io.sovereigngateway.JournalVerification;
import io.sovereigngateway.JournalVerifier;
import io.sovereigngateway.PermissionDeniedException;
import io.sovereigngateway.RagQuery;
import io.sovereigngateway.RagResult;
import io.sovereigngateway.Sovereignty;
import io.sovereigngateway.SovereignClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A newcomer's first program (scripts/newcomer-check java): the seven tasks of issue 49 against
 * {@code sovereign demo}, with the client installed as the README says. Environment:
 * SOVEREIGN_BASE_URL and SOVEREIGN_API_KEY (the member key: read by the library itself),
 * NEWCOMER_ADMIN_KEY, NEWCOMER_AUDITOR_KEY, NEWCOMER_PDF, NEWCOMER_JOURNAL_PUBKEY.
 */
public final class Newcomer {
    static final String ARABIC = "ما هي عاصمة المملكة العربية السعودية؟";
    static final String QUESTION = "ما هي مدة الاحتفاظ بسجلات العملاء؟";

    private Newcomer() {}

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) throws Exception {
        SovereignClient member = SovereignClient.builder().build(); // SOVEREIGN_BASE_URL, SOVEREIGN_API_KEY
        SovereignClient admin = SovereignClient.builder().apiKey(System.getenv("NEWCOMER_ADMIN_KEY")).build();
        SovereignClient auditor = SovereignClient.builder().apiKey(System.getenv("NEWCOMER_AUDITOR_KEY")).build();
        ChatCompletionRequest ask = ChatCompletionRequest.builder().model("auto-router").addUserMessage(ARABIC).build();

        // 1. An Arabic question to auto-router, and where it was served.
        ChatCompletion reply = member.chat().create(ask);
        Sovereignty s = reply.sovereignty();
        check(!reply.content().isEmpty() && "sa-riyadh-1".equals(s.dataResidency())
                && "demo-riyadh-1".equals(s.sovereignId()) && s.routePolicy() != null && s.auditTraceId() != null,
                "chat: " + s);
        System.out.println("1 chat: " + reply.model() + " in " + s.dataResidency() + " by " + s.routePolicy());

        // 2. Streaming: the metadata before the first chunk, the text from the chunks.
        StringBuilder text = new StringBuilder();
        try (ChatCompletionStream stream = member.chat().stream(ask)) {
            check("sa-riyadh-1".equals(stream.sovereignty().dataResidency()), "stream: " + stream.sovereignty());
            for (ChatCompletionChunk chunk : stream) {
                text.append(chunk.content());
            }
        }
        check(text.length() > 0, "stream: no text");
        System.out.println("2 stream: " + text.codePointCount(0, text.length()) + " characters");

        // 3. Embeddings.
        EmbeddingResponse emb = member.embeddings().create(EmbeddingRequest.of("multilingual-e5-small", "مرحبا", "hello"));
        check(emb.vectors().size() == 2 && "demo-riyadh-1".equals(emb.sovereignty().sovereignId()), "embeddings");
        System.out.println("3 embeddings: " + emb.vectors().size() + " x " + emb.vectors().get(0).length);

        // 4. Upload a document and ask a question with citations.
        String collection = "newcomer-" + ProcessHandle.current().pid();
        Document doc = member.documents().upload(Path.of(System.getenv("NEWCOMER_PDF")), collection);
        RagResult rag = member.rag().query(RagQuery.of(QUESTION).collection(collection).topK(2));
        List<Citation> citations = rag.citations();
        check(!citations.isEmpty() && doc.id().equals(citations.get(0).documentId()), "rag: " + rag);
        System.out.printf("4 rag: cited %s page %s, confidence %.2f%n", citations.get(0).documentId(),
                citations.get(0).page(), rag.confidence());
        member.documents().delete(doc.id());

        // 5. The journal: a page of entries, then the export verified offline against the pinned key.
        ActivityPage page = auditor.activity().query(ActivityQuery.all().limit(5));
        check(!page.data().isEmpty(), "no journal entries");
        auditor.journal().createCheckpoint();
        List<String> lines = auditor.activity().exportLines(ActivityQuery.all());
        List<Checkpoint> checkpoints = auditor.journal().listCheckpoints();
        String publicKey = Files.readString(Path.of(System.getenv("NEWCOMER_JOURNAL_PUBKEY"))).trim();
        JournalVerification v = JournalVerifier.verifyExport(lines, checkpoints, publicKey);
        check(v.ok(), "journal: " + v.problem());
        System.out.println("5 journal: " + page.data().size() + " listed, " + v.entries() + " verified offline, "
                + v.checkpointsChecked() + " checkpoint(s) matched");

        // 6. Typed errors: a member may not read the journal; a card number is a guardrail refusal.
        try {
            member.journal().listCheckpoints();
            throw new AssertionError("a member read the journal");
        } catch (PermissionDeniedException e) {
            check(e.status() == 403, "403");
        }
        try {
            member.chat().create(ChatCompletionRequest.builder().model("auto-router")
                    .addUserMessage("card 4111 1111 1111 1111").build());
            throw new AssertionError("the card number passed");
        } catch (GuardrailViolationException e) {
            check(e instanceof BadRequestException && "pii_detected".equals(e.code()), "guardrail: " + e);
        }
        System.out.println("6 errors: PermissionDeniedException (403), GuardrailViolationException (a BadRequestException)");

        // 7. Admin: create a key, use it, revoke it.
        ApiKey key = admin.admin().keys().create("demo", "member", collection);
        SovereignClient user = SovereignClient.builder().apiKey(key.key()).maxRetries(0).build();
        check(!user.models().list().isEmpty(), "the new key");
        admin.admin().keys().revoke(key.id());
        try {
            user.models().list();
            throw new AssertionError("a revoked key worked");
        } catch (AuthenticationException e) {
            // expected
        }
        System.out.println("7 admin: key " + key.id() + " created, used, revoked");
        System.out.println("newcomer: 7 of 7 tasks done");
    }
}
