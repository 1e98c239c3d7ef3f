package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The activity log (pages, iteration, exports) and the journal verified offline and by the server. */
class GatewayJournalTest {
    static DemoGateway gw;

    @BeforeAll
    static void up() {
        gw = DemoGateway.get();
        // a few entries of our own
        for (int i = 0; i < 3; i++) {
            gw.member().models().list();
        }
    }

    /** createCheckpoint, skipped only while the binary predates the checkpoint routes (404). */
    static Checkpoint checkpointOrSkip() {
        try {
            return gw.admin().journal().createCheckpoint();
        } catch (NotFoundException e) {
            Assumptions.assumeTrue(false, "POST /v1/admin/journal/checkpoints answers 404: the binary predates the checkpoint routes");
            throw e;
        }
    }

    @Test
    void pagesIterateAndExport() {
        Activity activity = gw.admin().activity();
        ActivityPage page = activity.query(ActivityQuery.all().limit(2));
        assertEquals(2, page.data().size());
        assertNotNull(page.nextCursor());
        assertNotNull(page.data().get(0).getString("journal_hash"));
        List<Long> seqs = new ArrayList<>();
        for (JsonObject e : activity.iterate(ActivityQuery.all().limit(2))) {
            seqs.add(e.getLong("seq"));
        }
        assertTrue(seqs.size() >= 3, seqs.toString());
        for (int i = 1; i < seqs.size(); i++) {
            assertTrue(seqs.get(i) > seqs.get(i - 1), "seq order " + seqs);
        }
        String csv = activity.export(ActivityQuery.all().action("models.list"), Activity.ExportFormat.CSV);
        assertTrue(csv.startsWith("seq,timestamp,request_id"), csv);
        assertTrue(csv.split("\r\n").length >= 4, csv);
        // a member may not read the log
        assertThrows(PermissionDeniedException.class, () -> gw.member().activity().query(ActivityQuery.all()));
        // an auditor reads its own team's entries
        for (JsonObject e : gw.auditor().activity().query(ActivityQuery.all().limit(50)).data()) {
            assertNotNull(e.getString("team_id"));
        }
        assertThrows(BadRequestException.class, () -> activity.query(ActivityQuery.all().set("bogus", 1)));
    }

    @Test
    void exportVerifiesOfflineAndAnEditIsFound() {
        List<String> lines = gw.admin().activity().exportLines(ActivityQuery.all());
        assertTrue(lines.size() >= 3);
        JournalVerification ok = JournalVerifier.verifyExport(lines, null, null);
        assertTrue(ok.ok(), ok.toString());
        assertEquals(lines.size(), ok.entries());
        assertEquals(1L, ok.firstSeq());
        assertEquals(0, ok.gaps());

        int target = lines.size() / 2; // 0-based
        Map<String, Object> e = Json.parseObject(lines.get(target));
        e.put("status", "success".equals(e.get("status")) ? "error" : "success");
        List<String> edited = new ArrayList<>(lines);
        edited.set(target, Jcs.encodeToString(e));
        JournalVerification bad = JournalVerifier.verifyExport(edited, null, null);
        assertFalse(bad.ok());
        assertTrue(bad.problem().reason().startsWith("edited"), bad.toString());
        assertEquals(target + 1, bad.problem().line());
        assertEquals(e.get("seq"), bad.problem().seq());
    }

    @Test
    void checkpointMatchesAndAForeignKeyIsUntrusted() throws IOException {
        Checkpoint cp = checkpointOrSkip();
        assertNotNull(cp.signature());
        assertEquals("demo-riyadh-1", cp.sovereignId());
        List<Checkpoint> listed = gw.admin().journal().listCheckpoints();
        assertTrue(listed.stream().anyMatch(c -> c.seq().equals(cp.seq()) && c.headHash().equals(cp.headHash())), listed.toString());

        List<String> lines = gw.admin().activity().exportLines(ActivityQuery.all());
        String operatorKey = operatorPublicKey().orElse(cp.publicKey());
        JournalVerification r = JournalVerifier.verifyExport(lines, listed, operatorKey, "demo-riyadh-1");
        assertTrue(r.ok(), r.toString());
        assertTrue(r.checkpointsChecked() >= 1, r.toString());
        JournalVerification viaCreate = JournalVerifier.verifyExport(lines, List.of(cp), operatorKey);
        assertTrue(viaCreate.ok(), viaCreate.toString());
        assertEquals(1, viaCreate.checkpointsChecked());

        String other = "ed25519:" + "ab".repeat(32);
        JournalVerification untrusted = JournalVerifier.verifyExport(lines, List.of(cp), other);
        assertFalse(untrusted.ok());
        assertTrue(untrusted.problem().reason().startsWith("untrusted key"), untrusted.toString());

        // the same export with the checkpointed entry rewritten and its hash recomputed
        int idx = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (cp.seq().equals(Json.parseObject(lines.get(i)).get("seq"))) {
                idx = i;
            }
        }
        assertTrue(idx >= 0);
        Map<String, Object> e = Json.parseObject(lines.get(idx));
        e.remove("journal_hash");
        e.put("model", "rewritten-model");
        e.put("journal_hash", "sha256:" + JournalVerifier.sha256Hex(
                ((String) e.get("prev_hash")).getBytes(java.nio.charset.StandardCharsets.UTF_8), Jcs.encode(e)));
        List<String> rewritten = new ArrayList<>(lines.subList(0, idx));
        rewritten.add(Jcs.encodeToString(e)); // the tail after it is cut, so only the checkpoint can tell
        JournalVerification rw = JournalVerifier.verifyExport(rewritten, List.of(cp), operatorKey);
        assertTrue(rw.problem().reason().startsWith("rewritten"), rw.toString());
        assertEquals(idx + 1, rw.problem().line());
    }

    @Test
    void serverSideVerification() {
        JsonObject report = gw.admin().journal().verify();
        assertEquals(Boolean.TRUE, report.getBoolean("ok"), report.toString());
        assertFalse(report.getObjects("chains", JsonObject::new).isEmpty());
        assertThrows(PermissionDeniedException.class, () -> gw.member().journal().verify());
    }

    /** The operator's key as the demo wrote it (`<signing_key>.pub`), if found under the data dir. */
    static Optional<String> operatorPublicKey() throws IOException {
        try (Stream<Path> s = Files.walk(gw.dataDir)) {
            Set<String> keys = new HashSet<>();
            s.filter(p -> p.getFileName().toString().endsWith(".pub")).forEach(p -> {
                try {
                    String k = Files.readString(p).trim();
                    if (k.startsWith("ed25519:")) {
                        keys.add(k);
                    }
                } catch (IOException ex) {
                    // ignore
                }
            });
            return keys.size() == 1 ? Optional.of(keys.iterator().next()) : Optional.empty();
        }
    }
}
