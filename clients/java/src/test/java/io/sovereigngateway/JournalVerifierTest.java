package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Offline verification on chains written here (the hash itself is checked against Python in JcsTest). */
class JournalVerifierTest {
    static List<String> chain(int n) {
        List<String> lines = new ArrayList<>();
        String prev = JournalVerifier.GENESIS_HASH;
        for (int seq = 1; seq <= n; seq++) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("seq", (long) seq);
            e.put("prev_hash", prev);
            e.put("timestamp", "2026-11-22T21:31:47.12" + (seq % 10) + "Z");
            e.put("request_id", "req_" + seq);
            e.put("actor_id", "مستخدم");
            e.put("team_id", "team_a");
            e.put("key_id", "key_a");
            e.put("action", "chat.completions");
            e.put("model", seq % 2 == 0 ? null : "jais-30b-chat");
            e.put("prompt_hash", null);
            e.put("routing_policy", "sovereign-default");
            e.put("residency_boundary", "sa-riyadh-1");
            e.put("status", "success");
            e.put("prompt_tokens", 12L);
            e.put("completion_tokens", 3L);
            e.put("latency_us", 1000L + seq);
            String hash = "sha256:" + JournalVerifier.sha256Hex(prev.getBytes(StandardCharsets.UTF_8), Jcs.encode(e));
            e.put("journal_hash", hash);
            lines.add(Jcs.encodeToString(e));
            prev = hash;
        }
        return lines;
    }

    /**
     * Two entries as the gateway writes them, the second with {@code charges} (docs/JOURNAL.md);
     * hashes computed with Python's {@code rfc8785} package, independently of {@link Jcs}.
     */
    static final List<String> CHARGED_EXPORT = List.of(
            "{\"action\":\"models.list\",\"actor_id\":\"key_1\",\"auth\":\"key\",\"completion_tokens\":null,"
                    + "\"journal_hash\":\"sha256:41a6eebe7a154b8b4ffa2d665dc5b2745a86dcf93387d2e36cb03e995ba98a13\","
                    + "\"key_id\":\"key_1\",\"latency_us\":812,\"model\":null,"
                    + "\"prev_hash\":\"sha256:0000000000000000000000000000000000000000000000000000000000000000\","
                    + "\"prompt_hash\":null,\"prompt_tokens\":null,\"request_id\":\"req-1\",\"residency_boundary\":null,"
                    + "\"routing_policy\":null,\"seq\":1,\"status\":\"success\",\"team_id\":\"team_1\","
                    + "\"timestamp\":\"2026-11-22T21:31:47.123Z\"}",
            "{\"action\":\"chat.completions\",\"actor_id\":\"key_1\",\"auth\":\"key\","
                    + "\"charges\":[{\"model\":\"local-llama\",\"spend_micros\":42,\"tokens_in\":10,\"tokens_out\":20},"
                    + "{\"model\":\"jais-30b-chat\",\"spend_micros\":0,\"tokens_in\":7,\"tokens_out\":0}],"
                    + "\"completion_tokens\":20,"
                    + "\"journal_hash\":\"sha256:cb74dc42eb24f73d6cc8371e550a97d33d6d3ff3b68ffb8cf889e3f6ffdacbee\","
                    + "\"key_id\":\"key_1\",\"latency_us\":1234,\"model\":\"local-llama\","
                    + "\"prev_hash\":\"sha256:41a6eebe7a154b8b4ffa2d665dc5b2745a86dcf93387d2e36cb03e995ba98a13\","
                    + "\"prompt_hash\":\"sha256:abababababababababababababababababababababababababababababababab\","
                    + "\"prompt_tokens\":10,\"request_id\":\"req-2\",\"residency_boundary\":\"eu-west\","
                    + "\"routing_policy\":\"sovereign-default\",\"seq\":2,\"status\":\"success\",\"team_id\":\"team_1\","
                    + "\"timestamp\":\"2026-11-22T21:31:48.456Z\"}");

    static String field(String line, String key) {
        return (String) Json.parseObject(line).get(key);
    }

    static Map<String, Object> checkpoint(KeyPair kp, String sovereignId, long seq, String headHash) throws Exception {
        byte[] enc = kp.getPublic().getEncoded();
        byte[] raw = Arrays.copyOfRange(enc, enc.length - 32, enc.length);
        Map<String, Object> cp = new LinkedHashMap<>();
        cp.put("count", seq);
        cp.put("head_hash", headHash);
        cp.put("public_key", "ed25519:" + JournalVerifier.toHex(raw));
        cp.put("seq", seq);
        cp.put("sovereign_id", sovereignId);
        cp.put("timestamp", "2026-11-22T21:31:48.000Z");
        Signature s = Signature.getInstance("Ed25519");
        s.initSign(kp.getPrivate());
        s.update(Jcs.encode(cp));
        cp.put("signature", "ed25519:" + JournalVerifier.toHex(s.sign()));
        return cp;
    }

    static KeyPair ed25519() throws Exception {
        return KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
    }

    @Test
    void intactChainVerifies() {
        List<String> lines = chain(5);
        JournalVerification r = JournalVerifier.verifyExport(lines, null, null);
        assertTrue(r.ok(), r.toString());
        assertEquals(5, r.entries());
        assertEquals(1L, r.firstSeq());
        assertEquals(5L, r.headSeq());
        assertEquals(field(lines.get(4), "journal_hash"), r.headHash());
        assertEquals(0, r.gaps());
        assertNull(r.problem());
    }

    @Test
    void editedEntryIsFoundOnItsLine() {
        List<String> lines = chain(5);
        lines.set(2, lines.get(2).replace("\"status\":\"success\"", "\"status\":\"error\""));
        JournalVerification r = JournalVerifier.verifyExport(lines, null, null);
        assertFalse(r.ok());
        assertEquals(3, r.problem().line());
        assertEquals(3L, r.problem().seq());
        assertTrue(r.problem().reason().startsWith("edited"), r.problem().reason());
    }

    @Test
    void entryWithChargesVerifiesAsTheReferenceHashedIt() {
        JournalVerification r = JournalVerifier.verifyExport(CHARGED_EXPORT, null, null);
        assertTrue(r.ok(), r.toString());
        assertEquals(2, r.entries());
        assertEquals("sha256:cb74dc42eb24f73d6cc8371e550a97d33d6d3ff3b68ffb8cf889e3f6ffdacbee", r.headHash());
        // re-encoded, not trusted as written: the charges' keys in another order still verify
        String shuffled = CHARGED_EXPORT.get(1).replace(
                "{\"model\":\"local-llama\",\"spend_micros\":42,\"tokens_in\":10,\"tokens_out\":20}",
                "{\"tokens_out\":20,\"tokens_in\":10,\"spend_micros\":42,\"model\":\"local-llama\"}");
        assertTrue(JournalVerifier.verifyExport(List.of(CHARGED_EXPORT.get(0), shuffled), null, null).ok());
        String edited = CHARGED_EXPORT.get(1).replace("\"spend_micros\":42", "\"spend_micros\":41");
        JournalVerification bad = JournalVerifier.verifyExport(List.of(CHARGED_EXPORT.get(0), edited), null, null);
        assertTrue(bad.problem().reason().startsWith("edited"), bad.toString());
        assertEquals(2, bad.problem().line());

        List<JournalCharge> charges = JournalCharge.of(new JsonObject(Json.parseObject(CHARGED_EXPORT.get(1))));
        assertEquals(2, charges.size());
        assertEquals("local-llama", charges.get(0).model());
        assertEquals(List.of(42L, 10L, 20L),
                List.of(charges.get(0).spendMicros(), charges.get(0).tokensIn(), charges.get(0).tokensOut()));
        assertTrue(JournalCharge.of(new JsonObject(Json.parseObject(CHARGED_EXPORT.get(0)))).isEmpty());
    }

    @Test
    void brokenLinkReorderedMalformedAndGaps() {
        List<String> lines = chain(5);
        // gaps are allowed (a filtered export)
        JournalVerification gaps = JournalVerifier.verifyExport(List.of(lines.get(0), lines.get(2), lines.get(4)), null, null);
        assertTrue(gaps.ok(), gaps.toString());
        assertEquals(2, gaps.gaps());
        // reordered
        JournalVerification re = JournalVerifier.verifyExport(List.of(lines.get(1), lines.get(0)), null, null);
        assertTrue(re.problem().reason().startsWith("reordered"), re.toString());
        assertEquals(2, re.problem().line());
        // broken link: a consecutive seq from another chain
        List<String> other = chain(2);
        String spliced = other.get(1).replace("\"prev_hash\":\"" + field(other.get(1), "prev_hash") + "\"",
                "\"prev_hash\":\"sha256:" + "1".repeat(64) + "\"");
        Map<String, Object> e = Json.parseObject(spliced);
        e.remove("journal_hash");
        String prev = (String) e.get("prev_hash");
        e.put("journal_hash", "sha256:" + JournalVerifier.sha256Hex(prev.getBytes(StandardCharsets.UTF_8), Jcs.encode(e)));
        JournalVerification broken = JournalVerifier.verifyExport(List.of(lines.get(0), Jcs.encodeToString(e)), null, null);
        assertTrue(broken.problem().reason().startsWith("broken link"), broken.toString());
        // malformed
        JournalVerification bad = JournalVerifier.verifyExport(List.of(lines.get(0), "{not json"), null, null);
        assertTrue(bad.problem().reason().startsWith("malformed"), bad.toString());
        assertEquals(2, bad.problem().line());
        JournalVerification noHash = JournalVerifier.verifyExport(List.of("{\"seq\":1}"), null, null);
        assertTrue(noHash.problem().reason().startsWith("malformed"), noHash.toString());
    }

    @Test
    void checkpointsMatchRewrittenTruncatedBadSignatureUntrustedKey() throws Exception {
        KeyPair operator = ed25519();
        List<String> lines = chain(6);
        Map<String, Object> cp4 = checkpoint(operator, "eu-1", 4, field(lines.get(3), "journal_hash"));
        String pub = (String) cp4.get("public_key");

        JournalVerification ok = JournalVerifier.verifyExport(lines, List.of(cp4), pub);
        assertTrue(ok.ok(), ok.toString());
        assertEquals(1, ok.checkpointsChecked());
        // as a JSON line, and as a Checkpoint object
        assertTrue(JournalVerifier.verifyExport(lines, List.of(Json.write(cp4)), pub + "\n").ok());
        assertEquals(1, JournalVerifier.verifyExport(lines, List.of(new Checkpoint(cp4)), null).checkpointsChecked());

        // another chain's checkpoint is not used
        Map<String, Object> foreign = checkpoint(operator, "eu-2", 4, "sha256:" + "2".repeat(64));
        JournalVerification mixed = JournalVerifier.verifyExport(lines, List.of(cp4, foreign), pub, "eu-1");
        assertTrue(mixed.ok(), mixed.toString());
        assertEquals(1, mixed.checkpointsChecked());
        assertTrue(JournalVerifier.verifyExport(lines, List.of(cp4, foreign), pub).problem().reason().startsWith("malformed"));

        // rewritten: a checkpoint naming another head at seq 4
        Map<String, Object> other = checkpoint(operator, "eu-1", 4, "sha256:" + "3".repeat(64));
        JournalVerification rewritten = JournalVerifier.verifyExport(lines, List.of(other), pub);
        assertTrue(rewritten.problem().reason().startsWith("rewritten"), rewritten.toString());
        assertEquals(4, rewritten.problem().line());

        // truncated: a checkpoint beyond the end of an export from seq 1 without gaps
        Map<String, Object> cp9 = checkpoint(operator, "eu-1", 9, "sha256:" + "4".repeat(64));
        JournalVerification truncated = JournalVerifier.verifyExport(lines, List.of(cp9), pub);
        assertTrue(truncated.problem().reason().startsWith("truncated"), truncated.toString());

        // bad signature: a field changed after signing
        Map<String, Object> forged = new LinkedHashMap<>(cp4);
        forged.put("count", 5L);
        JournalVerification bad = JournalVerifier.verifyExport(lines, List.of(forged), null);
        assertTrue(bad.problem().reason().startsWith("bad signature"), bad.toString());

        // untrusted key: validly signed by someone else
        Map<String, Object> selfSigned = checkpoint(ed25519(), "eu-1", 4, field(lines.get(3), "journal_hash"));
        JournalVerification untrusted = JournalVerifier.verifyExport(lines, List.of(selfSigned), pub);
        assertTrue(untrusted.problem().reason().startsWith("untrusted key"), untrusted.toString());
        assertTrue(JournalVerifier.verifyExport(lines, List.of(selfSigned), null).ok());
    }
}
