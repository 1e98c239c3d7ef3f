package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The journal as a transparency log against {@code sovereign demo}: checkpoint, key, inclusion
 * and consistency proofs fetched and verified offline. Fails (does not skip) when the gateway
 * lacks the routes.
 */
class GatewayTransparencyLogTest {
    static DemoGateway gw;

    @BeforeAll
    static void up() {
        gw = DemoGateway.get();
        for (int i = 0; i < 3; i++) {
            gw.member().models().list();
        }
    }

    @Test
    void checkpointInclusionAndConsistencyVerifyOffline() {
        Activity activity = gw.admin().activity();
        String vkey = activity.checkpointKey();
        TransparencyLog.VerifierKey key = TransparencyLog.parseVerifierKey(vkey);
        assertTrue(key.name().startsWith("sovereign-gateway/journal/"), vkey);

        String note1 = activity.checkpoint();
        TransparencyLog.VerifiedCheckpoint cp1 = TransparencyLog.verifyCheckpoint(note1, vkey);
        assertEquals(key.name(), cp1.origin());
        assertTrue(cp1.treeSize() >= 3, cp1.toString());

        // an entry the checkpoint covers, as the export gives it
        List<String> lines = activity.exportLines(ActivityQuery.all().action("models.list"));
        String line = null;
        for (String l : lines) {
            if ((Long) Json.parseObject(l).get("seq") <= cp1.treeSize()) {
                line = l;
            }
        }
        assertTrue(line != null, "no models.list entry within the checkpoint: " + lines);
        Map<String, Object> entry = Json.parseObject(line);
        String requestId = (String) entry.get("request_id");
        long seq = (Long) entry.get("seq");
        List<String> exact = activity.exportLines(ActivityQuery.all().requestId(requestId));
        assertEquals(List.of(line), exact);

        InclusionProof proof = activity.inclusionProof(requestId, cp1.treeSize());
        assertEquals(seq - 1, proof.leafIndex());
        assertEquals(cp1.treeSize(), proof.treeSize());
        assertEquals(cp1, TransparencyLog.verifyInclusion(line, proof, note1, vkey));
        assertEquals(cp1, TransparencyLog.verifyInclusion(line + "\n", proof, note1, vkey));
        String tampered = line.replace("\"models.list\"", "\"models.lisT\"");
        JournalVerificationException e = assertThrows(JournalVerificationException.class,
                () -> TransparencyLog.verifyInclusion(tampered, proof, note1, vkey));
        assertTrue(e.reason().startsWith("inclusion"), e.reason());

        InclusionProof latest = activity.inclusionProof(requestId);
        assertEquals(seq - 1, latest.leafIndex());
        assertTrue(latest.treeSize() >= cp1.treeSize(), latest.toString());

        // the log grows; the newer checkpoint extends the older one
        for (int i = 0; i < 3; i++) {
            gw.member().models().list();
        }
        String note2 = gw.auditor().activity().checkpoint();
        TransparencyLog.VerifiedCheckpoint cp2 = TransparencyLog.verifyCheckpoint(note2, vkey);
        assertTrue(cp2.treeSize() >= cp1.treeSize() + 3, cp1 + " then " + cp2);
        ConsistencyProof consistency = activity.consistencyProof(cp1.treeSize(), cp2.treeSize());
        assertEquals(cp1.treeSize(), consistency.from());
        assertEquals(cp2.treeSize(), consistency.to());
        assertEquals(cp2, TransparencyLog.verifyConsistency(note1, note2, consistency, vkey));
        JournalVerificationException backwards = assertThrows(JournalVerificationException.class,
                () -> TransparencyLog.verifyConsistency(note2, note1, consistency, vkey));
        assertTrue(backwards.reason().startsWith("consistency"), backwards.reason());
        InclusionProof inNewer = activity.inclusionProof(requestId, cp2.treeSize());
        assertEquals(cp2, TransparencyLog.verifyInclusion(line, inNewer, note2, vkey));
        assertEquals(vkey, gw.auditor().activity().checkpointKey());
    }

    @Test
    void refusals() {
        Activity activity = gw.admin().activity();
        String vkey = activity.checkpointKey();
        long size = TransparencyLog.verifyCheckpoint(activity.checkpoint(), vkey).treeSize();
        assertThrows(PermissionDeniedException.class, () -> gw.member().activity().checkpoint());
        assertThrows(PermissionDeniedException.class, () -> gw.member().activity().inclusionProof("req_x"));
        assertThrows(NotFoundException.class, () -> activity.inclusionProof("req_no_such_request_" + System.nanoTime()));
        assertThrows(BadRequestException.class, () -> activity.consistencyProof(0, size)); // m == 0 is refused

        String line = activity.exportLines(ActivityQuery.all().limit(1)).get(0);
        Map<String, Object> first = Json.parseObject(line);
        assertEquals(1L, first.get("seq"));
        // tree_size below leaf_index + 1 (= 1)
        assertThrows(BadRequestException.class, () -> activity.inclusionProof((String) first.get("request_id"), 0L));
        assertThrows(BadRequestException.class,
                () -> activity.inclusionProof((String) first.get("request_id"), size + 1_000_000));
    }
}
