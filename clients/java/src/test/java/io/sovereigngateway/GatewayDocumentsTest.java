package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Upload the Arabic PDF fixture, list, get, query with citations, delete. */
class GatewayDocumentsTest {
    static DemoGateway gw;

    @BeforeAll
    static void up() {
        gw = DemoGateway.get();
    }

    @Test
    void uploadListGetQueryDelete() {
        Path pdf = DemoGateway.repoRoot().resolve("host/documents/tests/fixtures/ar_harfbuzz.pdf");
        assertTrue(Files.exists(pdf), pdf.toString());
        String collection = "java-" + UUID.randomUUID().toString().substring(0, 8);
        Documents docs = gw.member().documents();

        Document d = docs.upload(pdf, collection, Map.of("source", "java-test"));
        assertTrue(d.id().startsWith("doc_"), d.toString());
        assertEquals("pdf", d.kind());
        assertEquals("ar_harfbuzz.pdf", d.filename());
        assertEquals(collection, d.collection());
        assertEquals("completed", d.status());
        assertTrue(d.pages() >= 1);
        assertEquals("java-test", d.metadata().getString("source"));

        DocumentList list = docs.list(collection, 10, null);
        assertEquals(List.of(d.id()), list.data().stream().map(Document::id).collect(java.util.stream.Collectors.toList()));
        assertEquals(d.sha256(), docs.retrieve(d.id()).sha256());

        RagResult r = gw.member().rag().query(RagQuery.of("كم مدة الاحتفاظ بسجلات العملاء؟").collection(collection).topK(3));
        assertFalse(r.citations().isEmpty(), r.toString());
        Citation c = r.citations().get(0);
        assertEquals(d.id(), c.documentId());
        assertEquals("ar_harfbuzz.pdf", c.filename());
        assertNotNull(c.page());
        assertTrue(c.page() >= 1);
        assertFalse(c.text().isBlank());
        assertTrue(c.chunkId().startsWith("chk_"), c.chunkId());
        assertTrue(r.confidence() >= 0 && r.confidence() <= 1, r.toString());
        assertTrue(c.confidence() >= 0 && c.confidence() <= 1);
        assertNotNull(r.sovereignty().auditTraceId());

        Deleted del = docs.delete(d.id());
        assertTrue(del.deleted());
        assertEquals(d.id(), del.id());
        assertThrows(NotFoundException.class, () -> docs.retrieve(d.id()));
        // an auditor may list but not upload
        assertThrows(PermissionDeniedException.class, () -> gw.auditor().documents().upload("a.txt", "x".getBytes(), collection, null));
    }
}
