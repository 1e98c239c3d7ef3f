package io.sovereigngateway;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.MessageDigest;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Offline verification of a journal export (docs/JOURNAL.md; SPEC.md "Offline journal
 * verification"): every {@code journal_hash} recomputed (SHA-256 over the previous hash and the
 * RFC 8785 encoding of the entry), every link between consecutive entries, and signed checkpoints
 * (Ed25519, JDK only) against the entries they name. No call to the gateway.
 */
public final class JournalVerifier {
    private JournalVerifier() {}

    public static final String GENESIS_HASH = "sha256:" + "0".repeat(64);
    private static final byte[] ED25519_X509_PREFIX = hex("302a300506032b6570032100");

    /** Verifies the {@code jsonl} export's lines; checkpoints and key may be null. */
    public static JournalVerification verifyExport(List<String> lines, List<?> checkpoints, String publicKey) {
        return verifyExport(lines, checkpoints, publicKey, null);
    }

    /**
     * @param lines       the export's lines (each exactly as the chain holds it; blank lines skipped)
     * @param checkpoints signed checkpoints: {@link Checkpoint}s, maps, or JSON lines; may be null
     * @param publicKey   the pinned operator key ({@code ed25519:<64 hex>}, a {@code .pub} file's content); may be null
     * @param sovereignId the chain the export is from (only its checkpoints are used); null: the
     *                    one chain the checkpoints name
     */
    public static JournalVerification verifyExport(List<String> lines, List<?> checkpoints, String publicKey,
            String sovereignId) {
        JournalVerification r = new JournalVerification();
        Map<Long, Object[]> bySeq = new HashMap<>(); // seq -> {journal_hash, line}
        Long lastSeq = null;
        String lastHash = null;
        int number = 0;
        for (String raw : lines) {
            number++;
            String text = raw.endsWith("\r") ? raw.substring(0, raw.length() - 1) : raw;
            if (text.isBlank()) {
                continue;
            }
            Map<String, Object> entry;
            try {
                entry = Json.parseObject(text);
            } catch (Json.ParseException e) {
                return fail(r, number, null, "malformed: not a JSON object (" + e.getMessage() + ")");
            }
            Object claimedObj = entry.get("journal_hash");
            if (!(claimedObj instanceof String)) {
                return fail(r, number, null, "malformed: no string journal_hash");
            }
            Object seqObj = entry.get("seq");
            Object prevObj = entry.get("prev_hash");
            if (!(seqObj instanceof Long) || !(prevObj instanceof String)) {
                return fail(r, number, null, "malformed: seq or prev_hash missing or of the wrong type");
            }
            long seq = (Long) seqObj;
            String prev = (String) prevObj;
            String claimed = (String) claimedObj;
            Map<String, Object> rest = new LinkedHashMap<>(entry);
            rest.remove("journal_hash");
            byte[] canonical;
            try {
                canonical = Jcs.encode(rest);
            } catch (IllegalArgumentException e) {
                return fail(r, number, seq, "malformed: " + e.getMessage());
            }
            String computed = "sha256:" + sha256Hex(prev.getBytes(StandardCharsets.UTF_8), canonical);
            if (!computed.equals(claimed)) {
                return fail(r, number, seq, "edited: journal_hash does not match the entry");
            }
            if (lastSeq == null) {
                if (seq == 1 && !GENESIS_HASH.equals(prev)) {
                    return fail(r, number, seq, "broken link: the first entry's prev_hash is not the genesis hash");
                }
                r.firstSeq = seq;
            } else if (seq <= lastSeq) {
                return fail(r, number, seq, "reordered: seq " + seq + " after seq " + lastSeq);
            } else if (seq == lastSeq + 1) {
                if (!prev.equals(lastHash)) {
                    return fail(r, number, seq, "broken link: prev_hash is not the previous entry's journal_hash");
                }
            } else {
                r.gaps++;
            }
            lastSeq = seq;
            lastHash = claimed;
            bySeq.put(seq, new Object[] {claimed, number});
            r.entries++;
            r.headSeq = seq;
            r.headHash = claimed;
        }

        if (checkpoints == null || checkpoints.isEmpty()) {
            return r;
        }
        List<Map<String, Object>> cps = new ArrayList<>();
        int index = 0;
        for (Object item : checkpoints) {
            index++;
            Map<String, Object> cp = asMap(item);
            if (cp == null || !(cp.get("seq") instanceof Long)) {
                return fail(r, null, null, "malformed: checkpoint " + index + " is not a checkpoint object");
            }
            cps.add(cp);
        }
        String chain = sovereignId;
        if (chain == null) {
            Set<String> ids = new LinkedHashSet<>();
            for (Map<String, Object> cp : cps) {
                ids.add(String.valueOf(cp.get("sovereign_id")));
            }
            if (ids.size() > 1) {
                return fail(r, null, null, "malformed: the checkpoints name several chains " + ids
                        + ": pass the export's sovereignId");
            }
            chain = ids.iterator().next();
        }
        String pinned = publicKey == null ? null : normalizeKey(publicKey);
        index = 0;
        for (Map<String, Object> cp : cps) {
            index++;
            if (!chain.equals(String.valueOf(cp.get("sovereign_id")))) {
                continue; // another chain's checkpoint
            }
            long seq = (Long) cp.get("seq");
            if (!signatureValid(cp)) {
                return fail(r, null, seq, "bad signature: checkpoint " + index + " (seq " + seq + ") does not verify");
            }
            String key = normalizeKey(String.valueOf(cp.get("public_key")));
            if (pinned != null && !pinned.equals(key)) {
                return fail(r, null, seq, "untrusted key: checkpoint " + index + " (seq " + seq + ") is signed by "
                        + cp.get("public_key") + ", not the pinned key");
            }
            Object[] at = bySeq.get(seq);
            if (at != null) {
                if (!at[0].equals(cp.get("head_hash"))) {
                    return fail(r, (Integer) at[1], seq,
                            "rewritten: the entry differs from checkpoint " + index + "'s head_hash");
                }
                r.checkpointsChecked++;
            } else if (lastSeq != null && seq > lastSeq && r.gaps == 0 && r.firstSeq == 1) {
                return fail(r, null, seq, "truncated: checkpoint " + index + " vouches for seq " + seq
                        + ", the export ends at seq " + lastSeq);
            }
        }
        return r;
    }

    /** Ed25519 over JCS of the checkpoint without {@code signature}, with its own {@code public_key}. */
    public static boolean signatureValid(Map<String, Object> checkpoint) {
        Object sig = checkpoint.get("signature");
        Object key = checkpoint.get("public_key");
        if (!(sig instanceof String) || !(key instanceof String)) {
            return false;
        }
        try {
            byte[] raw = hex(normalizeKey((String) key));
            byte[] signature = hex(strip((String) sig));
            if (raw.length != 32 || signature.length != 64) {
                return false;
            }
            Map<String, Object> rest = new LinkedHashMap<>(checkpoint);
            rest.remove("signature");
            Signature v = Signature.getInstance("Ed25519");
            v.initVerify(ed25519PublicKey(raw));
            v.update(Jcs.encode(rest));
            return v.verify(signature);
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            return false;
        }
    }

    /** A raw 32-byte Ed25519 public key as a JDK key (X.509 SubjectPublicKeyInfo prefix + key). */
    public static PublicKey ed25519PublicKey(byte[] raw) throws GeneralSecurityException {
        byte[] der = new byte[ED25519_X509_PREFIX.length + raw.length];
        System.arraycopy(ED25519_X509_PREFIX, 0, der, 0, ED25519_X509_PREFIX.length);
        System.arraycopy(raw, 0, der, ED25519_X509_PREFIX.length, raw.length);
        return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(der));
    }

    /** {@code ed25519:<hex>} or bare hex, trimmed and lowercased, without the prefix. */
    static String normalizeKey(String key) {
        return strip(key.trim()).toLowerCase(Locale.ROOT);
    }

    private static String strip(String s) {
        return s.startsWith("ed25519:") ? s.substring("ed25519:".length()) : s;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object item) {
        if (item instanceof JsonObject) {
            return ((JsonObject) item).raw();
        }
        if (item instanceof Map) {
            return (Map<String, Object>) item;
        }
        if (item instanceof String) {
            try {
                return Json.parseObject(((String) item).trim());
            } catch (Json.ParseException e) {
                return null;
            }
        }
        return null;
    }

    private static JournalVerification fail(JournalVerification r, Integer line, Long seq, String reason) {
        r.ok = false;
        r.problem = new JournalVerification.Problem(line, seq, reason);
        return r;
    }

    static String sha256Hex(byte[]... parts) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (byte[] p : parts) {
                md.update(p);
            }
            return toHex(md.digest());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    static String toHex(byte[] b) {
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) {
            s.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return s.toString();
    }

    static byte[] hex(String s) {
        if (s.length() % 2 != 0) {
            throw new IllegalArgumentException("odd hex length");
        }
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            int hi = Character.digit(s.charAt(2 * i), 16);
            int lo = Character.digit(s.charAt(2 * i + 1), 16);
            if (hi < 0 || lo < 0) {
                throw new IllegalArgumentException("not hex");
            }
            out[i] = (byte) ((hi << 4) | lo);
        }
        return out;
    }

    static boolean isInteger(Object o) {
        return o instanceof Long || o instanceof BigInteger;
    }
}
