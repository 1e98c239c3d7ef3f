package io.sovereigngateway;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.PublicKey;
import java.security.Signature;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * Offline verification of the activity journal as an RFC 9162 transparency log: Ed25519
 * signed-note checkpoints (C2SP tlog-checkpoint), inclusion proofs of journal lines and
 * consistency proofs between checkpoints. No call to the gateway; SHA-256 and Ed25519 from the
 * JDK.
 *
 * <p>Every failure is a {@link JournalVerificationException} whose reason starts with
 * {@code malformed}, {@code bad signature}, {@code untrusted key}, {@code inclusion} or
 * {@code consistency}.
 */
public final class TransparencyLog {
    private TransparencyLog() {}

    /** The most signature lines a note may carry. */
    public static final int MAX_SIGNATURES = 16;
    private static final String SIG_PREFIX = "\u2014 ";
    private static final int HASH_SIZE = 32;

    /** A checkpoint whose signature verified: its origin, tree size and root hash. */
    public record VerifiedCheckpoint(String origin, long treeSize, byte[] rootHash) {
        public VerifiedCheckpoint {
            rootHash = rootHash.clone();
        }

        @Override
        public byte[] rootHash() {
            return rootHash.clone();
        }

        /** The root hash, base64 (as the note writes it). */
        public String rootHashBase64() {
            return Base64.getEncoder().encodeToString(rootHash);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof VerifiedCheckpoint && ((VerifiedCheckpoint) o).origin.equals(origin)
                    && ((VerifiedCheckpoint) o).treeSize == treeSize
                    && Arrays.equals(((VerifiedCheckpoint) o).rootHash, rootHash);
        }

        @Override
        public int hashCode() {
            return (origin.hashCode() * 31 + Long.hashCode(treeSize)) * 31 + Arrays.hashCode(rootHash);
        }

        @Override
        public String toString() {
            return "VerifiedCheckpoint[origin=" + origin + ", treeSize=" + treeSize + ", rootHash="
                    + rootHashBase64() + "]";
        }
    }

    /** A parsed verifier key ({@code <name>+<8 hex key id>+<base64(0x01 || key)>}). */
    public record VerifierKey(String name, byte[] keyId, byte[] publicKey) {
        public VerifierKey {
            keyId = keyId.clone();
            publicKey = publicKey.clone();
        }

        @Override
        public byte[] keyId() {
            return keyId.clone();
        }

        @Override
        public byte[] publicKey() {
            return publicKey.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof VerifierKey && ((VerifierKey) o).name.equals(name)
                    && Arrays.equals(((VerifierKey) o).publicKey, publicKey);
        }

        @Override
        public int hashCode() {
            return name.hashCode() * 31 + Arrays.hashCode(publicKey);
        }

        @Override
        public String toString() {
            return name + "+" + JournalVerifier.toHex(keyId) + "+" + Base64.getEncoder().encodeToString(
                    concat(new byte[] {1}, publicKey));
        }
    }

    // ---------------------------------------------------------------- high level

    /**
     * Verifies a checkpoint note against the verifier key ({@code GET /v1/activity/checkpoint/key}).
     * Accepted iff a signature line carries the key's name and key id and its Ed25519 signature
     * verifies (lines of other keys are ignored) and the note's origin is the key's name.
     */
    public static VerifiedCheckpoint verifyCheckpoint(String note, String vkey) {
        VerifierKey key = parseVerifierKey(vkey);
        if (note == null) {
            throw new JournalVerificationException("malformed: no checkpoint note");
        }
        checkText(note);
        int split = note.lastIndexOf("\n\n");
        if (split < 0) {
            throw new JournalVerificationException("malformed: the note has no blank line before its signatures");
        }
        String text = note.substring(0, split + 1);
        VerifiedCheckpoint cp = parseCheckpointBody(text);
        List<String[]> sigs = parseSignatureLines(note.substring(split + 2));
        if (!cp.origin().equals(key.name)) {
            throw new JournalVerificationException("untrusted key: the checkpoint's origin " + cp.origin()
                    + " is not the key's name " + key.name);
        }
        byte[] message = text.getBytes(StandardCharsets.UTF_8);
        boolean verified = false;
        for (String[] sig : sigs) {
            byte[] raw = Base64.getDecoder().decode(sig[1]);
            if (!sig[0].equals(key.name) || !Arrays.equals(Arrays.copyOf(raw, 4), key.keyId)) {
                continue; // another key's signature
            }
            byte[] ed = Arrays.copyOfRange(raw, 4, raw.length);
            if (ed.length != 64 || !ed25519Verify(key.publicKey, message, ed)) {
                throw new JournalVerificationException("bad signature: the signature of " + key.name + "+"
                        + JournalVerifier.toHex(key.keyId) + " does not verify");
            }
            verified = true;
        }
        if (!verified) {
            throw new JournalVerificationException("untrusted key: no signature of " + key.name + "+"
                    + JournalVerifier.toHex(key.keyId) + " on the checkpoint");
        }
        return cp;
    }

    /**
     * Verifies that {@code line} (a journal line exactly as the {@code jsonl} export gives it; one
     * trailing {@code "\n"} is stripped) is leaf {@code proof.leaf_index} of the tree that
     * {@code note} (a checkpoint of size {@code proof.tree_size}) signs.
     *
     * @return the verified checkpoint
     */
    public static VerifiedCheckpoint verifyInclusion(String line, InclusionProof proof, String note, String vkey) {
        if (line == null) {
            throw new JournalVerificationException("malformed: no journal line");
        }
        return verifyInclusion(line.getBytes(StandardCharsets.UTF_8), proof, note, vkey);
    }

    /** {@link #verifyInclusion(String, InclusionProof, String, String)} with the line's UTF-8 bytes. */
    public static VerifiedCheckpoint verifyInclusion(byte[] line, InclusionProof proof, String note, String vkey) {
        VerifiedCheckpoint cp = verifyCheckpoint(note, vkey);
        if (line == null) {
            throw new JournalVerificationException("malformed: no journal line");
        }
        if (proof == null) {
            throw new JournalVerificationException("malformed: no inclusion proof");
        }
        byte[] leaf = line;
        if (leaf.length > 0 && leaf[leaf.length - 1] == '\n') {
            leaf = Arrays.copyOf(leaf, leaf.length - 1);
        }
        long index = nonNegative(proof.raw(), "leaf_index");
        long size = nonNegative(proof.raw(), "tree_size");
        List<byte[]> hashes = decodeHashes(proof.raw());
        if (size != cp.treeSize()) {
            throw new JournalVerificationException("inclusion: the proof is for tree size " + size
                    + ", the checkpoint's size is " + cp.treeSize());
        }
        verifyInclusionProof(leafHash(leaf), index, size, hashes, cp.rootHash);
        return cp;
    }

    /**
     * Verifies both checkpoints and that the newer one's tree extends the older one's
     * ({@code proof.from} and {@code proof.to} must be their sizes).
     *
     * @return the newer verified checkpoint
     */
    public static VerifiedCheckpoint verifyConsistency(String oldNote, String newNote, ConsistencyProof proof,
            String vkey) {
        VerifiedCheckpoint older = verifyCheckpoint(oldNote, vkey);
        VerifiedCheckpoint newer = verifyCheckpoint(newNote, vkey);
        if (proof == null) {
            throw new JournalVerificationException("malformed: no consistency proof");
        }
        long from = nonNegative(proof.raw(), "from");
        long to = nonNegative(proof.raw(), "to");
        List<byte[]> hashes = decodeHashes(proof.raw());
        if (from != older.treeSize() || to != newer.treeSize()) {
            throw new JournalVerificationException("consistency: the proof is from " + from + " to " + to
                    + ", the checkpoints' sizes are " + older.treeSize() + " and " + newer.treeSize());
        }
        verifyConsistencyProof(from, to, older.rootHash, newer.rootHash, hashes);
        return newer;
    }

    // ---------------------------------------------------------------- low level (RFC 9162)

    /** SHA-256(0x00 || leaf). */
    public static byte[] leafHash(byte[] leaf) {
        MessageDigest md = sha256();
        md.update((byte) 0);
        md.update(leaf);
        return md.digest();
    }

    /** SHA-256(0x01 || left || right). */
    public static byte[] nodeHash(byte[] left, byte[] right) {
        MessageDigest md = sha256();
        md.update((byte) 1);
        md.update(left);
        md.update(right);
        return md.digest();
    }

    /** The root of the empty tree, SHA-256(""). */
    public static byte[] emptyRoot() {
        return sha256().digest();
    }

    /**
     * The root an inclusion proof leads to (RFC 9162 §2.1.3.2), to compare with a checkpoint's;
     * throws ({@code inclusion: ...}) when the path cannot be one of a tree of {@code size} leaves.
     */
    public static byte[] rootFromInclusion(byte[] leafHash, long index, long size, List<byte[]> hashes) {
        if (leafHash == null || leafHash.length != HASH_SIZE) {
            throw new JournalVerificationException("malformed: the leaf hash is not 32 bytes");
        }
        checkHashes(hashes);
        if (index < 0 || size < 0) {
            throw new JournalVerificationException("inclusion: negative leaf index or tree size");
        }
        if (index >= size) {
            throw new JournalVerificationException("inclusion: leaf index " + index + " is not below tree size " + size);
        }
        long fn = index;
        long sn = size - 1;
        byte[] r = leafHash;
        for (byte[] p : hashes) {
            if (sn == 0) {
                throw new JournalVerificationException("inclusion: the proof is too long for leaf " + index
                        + " of a tree of " + size);
            }
            if ((fn & 1) == 1 || fn == sn) {
                r = nodeHash(p, r);
                if ((fn & 1) == 0) {
                    while ((fn & 1) == 0 && fn != 0) {
                        fn >>= 1;
                        sn >>= 1;
                    }
                }
            } else {
                r = nodeHash(r, p);
            }
            fn >>= 1;
            sn >>= 1;
        }
        if (sn != 0) {
            throw new JournalVerificationException("inclusion: the proof is too short for leaf " + index
                    + " of a tree of " + size);
        }
        return r;
    }

    /** Throws ({@code inclusion: ...}) unless the proof leads from {@code leafHash} to {@code root}. */
    public static void verifyInclusionProof(byte[] leafHash, long index, long size, List<byte[]> hashes, byte[] root) {
        if (root == null || root.length != HASH_SIZE) {
            throw new JournalVerificationException("malformed: the root hash is not 32 bytes");
        }
        byte[] computed = rootFromInclusion(leafHash, index, size, hashes);
        if (!MessageDigest.isEqual(computed, root)) {
            throw new JournalVerificationException("inclusion: the proof for leaf " + index + " leads to root "
                    + b64(computed) + ", not the checkpoint's " + b64(root));
        }
    }

    /**
     * Throws ({@code consistency: ...}) unless {@code hashes} proves that the tree of {@code m}
     * leaves with root {@code root1} is a prefix of the tree of {@code n} leaves with root
     * {@code root2} (RFC 9162 §2.1.4.2; {@code 1 <= m <= n}; {@code m == n}: an empty proof and
     * equal roots).
     */
    public static void verifyConsistencyProof(long m, long n, byte[] root1, byte[] root2, List<byte[]> hashes) {
        if (root1 == null || root1.length != HASH_SIZE || root2 == null || root2.length != HASH_SIZE) {
            throw new JournalVerificationException("malformed: a root hash is not 32 bytes");
        }
        checkHashes(hashes);
        if (m < 1) {
            throw new JournalVerificationException("consistency: the older tree size " + m + " is below 1");
        }
        if (m > n) {
            throw new JournalVerificationException("consistency: the older tree size " + m
                    + " is above the newer one " + n);
        }
        if (m == n) {
            if (!hashes.isEmpty()) {
                throw new JournalVerificationException("consistency: a proof between equal sizes must be empty");
            }
            if (!MessageDigest.isEqual(root1, root2)) {
                throw new JournalVerificationException("consistency: two different roots for tree size " + m);
            }
            return;
        }
        if (hashes.isEmpty()) {
            throw new JournalVerificationException("consistency: empty proof from " + m + " to " + n);
        }
        List<byte[]> path = new ArrayList<>(hashes.size() + 1);
        if ((m & (m - 1)) == 0) {
            path.add(root1);
        }
        path.addAll(hashes);
        long fn = m - 1;
        long sn = n - 1;
        while ((fn & 1) == 1) {
            fn >>= 1;
            sn >>= 1;
        }
        byte[] fr = path.get(0);
        byte[] sr = path.get(0);
        for (byte[] c : path.subList(1, path.size())) {
            if (sn == 0) {
                throw new JournalVerificationException("consistency: the proof from " + m + " to " + n + " is too long");
            }
            if ((fn & 1) == 1 || fn == sn) {
                fr = nodeHash(c, fr);
                sr = nodeHash(c, sr);
                while ((fn & 1) == 0 && fn != 0) {
                    fn >>= 1;
                    sn >>= 1;
                }
            } else {
                sr = nodeHash(sr, c);
            }
            fn >>= 1;
            sn >>= 1;
        }
        if (sn != 0) {
            throw new JournalVerificationException("consistency: the proof from " + m + " to " + n + " is too short");
        }
        if (!MessageDigest.isEqual(fr, root1)) {
            throw new JournalVerificationException("consistency: the proof does not lead to the older root "
                    + b64(root1) + " (size " + m + ")");
        }
        if (!MessageDigest.isEqual(sr, root2)) {
            throw new JournalVerificationException("consistency: the proof does not lead to the newer root "
                    + b64(root2) + " (size " + n + ")");
        }
    }

    // ---------------------------------------------------------------- notes and keys

    /** Parses a verifier key line; throws ({@code malformed: ...}) when it is not one. */
    public static VerifierKey parseVerifierKey(String vkey) {
        if (vkey == null) {
            throw new JournalVerificationException("malformed: no verifier key");
        }
        String v = vkey.strip();
        int a = v.indexOf('+');
        int b = a < 0 ? -1 : v.indexOf('+', a + 1);
        if (a <= 0 || b < 0) {
            throw new JournalVerificationException("malformed: verifier key is not <name>+<key id>+<key>");
        }
        String name = v.substring(0, a);
        String idHex = v.substring(a + 1, b);
        String keyB64 = v.substring(b + 1);
        if (!validKeyName(name)) {
            throw new JournalVerificationException("malformed: verifier key name is not a key name");
        }
        if (!idHex.matches("[0-9a-f]{8}")) {
            throw new JournalVerificationException("malformed: verifier key id is not 8 lowercase hex digits");
        }
        byte[] typed = strictBase64(keyB64);
        if (typed == null || typed.length != 33 || typed[0] != 1) {
            throw new JournalVerificationException("malformed: verifier key is not base64 of 0x01 and a 32-byte Ed25519 key");
        }
        byte[] pub = Arrays.copyOfRange(typed, 1, 33);
        byte[] id = JournalVerifier.hex(idHex);
        if (!Arrays.equals(id, keyId(name, pub))) {
            throw new JournalVerificationException("malformed: verifier key id does not match its name and key");
        }
        return new VerifierKey(name, id, pub);
    }

    /** The first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key). */
    public static byte[] keyId(String name, byte[] publicKey) {
        MessageDigest md = sha256();
        md.update(name.getBytes(StandardCharsets.UTF_8));
        md.update((byte) 0x0a);
        md.update((byte) 0x01);
        md.update(publicKey);
        return Arrays.copyOf(md.digest(), 4);
    }

    /** Valid Unicode, no control characters other than newline (C0, DEL, C1). */
    private static void checkText(String note) {
        for (int i = 0; i < note.length(); i++) {
            char c = note.charAt(i);
            if ((c < 0x20 && c != '\n') || (c >= 0x7f && c <= 0x9f)) {
                throw new JournalVerificationException("malformed: the note has a control character other than newline");
            }
            if (Character.isSurrogate(c)) {
                if (Character.isHighSurrogate(c) && i + 1 < note.length() && Character.isLowSurrogate(note.charAt(i + 1))) {
                    i++;
                } else {
                    throw new JournalVerificationException("malformed: the note is not well-formed Unicode");
                }
            }
        }
    }

    /** Origin, tree size, root hash, optional non-empty extension lines; {@code text} ends with a newline. */
    private static VerifiedCheckpoint parseCheckpointBody(String text) {
        String[] lines = text.substring(0, text.length() - 1).split("\n", -1);
        if (lines.length < 3) {
            throw new JournalVerificationException("malformed: a checkpoint has an origin, a tree size and a root hash line");
        }
        String origin = lines[0];
        if (origin.isEmpty()) {
            throw new JournalVerificationException("malformed: the checkpoint's origin is empty");
        }
        String size = lines[1];
        if (!size.matches("0|[1-9][0-9]*")) {
            throw new JournalVerificationException("malformed: the checkpoint's tree size is not a decimal number without leading zeros");
        }
        long treeSize;
        try {
            treeSize = Long.parseLong(size);
        } catch (NumberFormatException e) {
            throw new JournalVerificationException("malformed: the checkpoint's tree size is too large", e);
        }
        byte[] root = strictBase64(lines[2]);
        if (root == null || root.length != HASH_SIZE) {
            throw new JournalVerificationException("malformed: the checkpoint's root hash is not base64 of 32 bytes");
        }
        for (int i = 3; i < lines.length; i++) {
            if (lines[i].isEmpty()) {
                throw new JournalVerificationException("malformed: the checkpoint has an empty extension line");
            }
        }
        return new VerifiedCheckpoint(origin, treeSize, root);
    }

    /** The signature lines as {name, base64}; at least one, at most {@link #MAX_SIGNATURES}. */
    private static List<String[]> parseSignatureLines(String block) {
        if (block.isEmpty() || !block.endsWith("\n")) {
            throw new JournalVerificationException("malformed: the note has no signature lines ending with a newline");
        }
        String[] lines = block.substring(0, block.length() - 1).split("\n", -1);
        if (lines.length > MAX_SIGNATURES) {
            throw new JournalVerificationException("malformed: the note has " + lines.length
                    + " signature lines, more than " + MAX_SIGNATURES);
        }
        List<String[]> out = new ArrayList<>();
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            if (!line.startsWith(SIG_PREFIX)) {
                throw new JournalVerificationException("malformed: signature line " + (i + 1)
                        + " does not start with an em dash and a space");
            }
            String rest = line.substring(SIG_PREFIX.length());
            int sp = rest.indexOf(' ');
            String name = sp < 0 ? "" : rest.substring(0, sp);
            byte[] raw = sp < 0 ? null : strictBase64(rest.substring(sp + 1));
            if (!validKeyName(name) || raw == null || raw.length < 5) {
                throw new JournalVerificationException("malformed: signature line " + (i + 1)
                        + " is not \u2014 <name> <base64 of key id and signature>");
            }
            out.add(new String[] {name, rest.substring(sp + 1)});
        }
        return out;
    }

    private static boolean ed25519Verify(byte[] publicKey, byte[] message, byte[] signature) {
        try {
            PublicKey pk = JournalVerifier.ed25519PublicKey(publicKey);
            Signature v = Signature.getInstance("Ed25519");
            v.initVerify(pk);
            v.update(message);
            return v.verify(signature);
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            return false;
        }
    }

    /** Non-empty, no Unicode spaces, no '+'. */
    private static boolean validKeyName(String name) {
        if (name.isEmpty()) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c == '+' || Character.isWhitespace(c) || Character.isSpaceChar(c) || c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
                return false;
            }
        }
        return true;
    }

    // ---------------------------------------------------------------- helpers

    /** Standard base64 with padding, canonical (re-encodes to the same text); null when not. */
    static byte[] strictBase64(String s) {
        try {
            byte[] b = Base64.getDecoder().decode(s);
            return Base64.getEncoder().encodeToString(b).equals(s) ? b : null;
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** Base64 hashes of a proof (32 bytes each), as bytes; {@code malformed} otherwise. */
    public static List<byte[]> decodeHashes(List<String> hashes) {
        if (hashes == null) {
            throw new JournalVerificationException("malformed: no proof hashes");
        }
        List<byte[]> out = new ArrayList<>(hashes.size());
        for (String h : hashes) {
            byte[] b = h == null ? null : strictBase64(h);
            if (b == null || b.length != HASH_SIZE) {
                throw new JournalVerificationException("malformed: a proof hash is not base64 of 32 bytes");
            }
            out.add(b);
        }
        return out;
    }

    private static List<byte[]> decodeHashes(Map<String, Object> proof) {
        Object v = proof.get("hashes");
        if (!(v instanceof List)) {
            throw new JournalVerificationException("malformed: the proof has no hashes array");
        }
        List<String> strings = new ArrayList<>();
        for (Object o : (List<?>) v) {
            if (!(o instanceof String)) {
                throw new JournalVerificationException("malformed: a proof hash is not a string");
            }
            strings.add((String) o);
        }
        return decodeHashes(strings);
    }

    private static long nonNegative(Map<String, Object> proof, String field) {
        Object v = proof.get(field);
        if (!(v instanceof Long || v instanceof Integer) || ((Number) v).longValue() < 0) {
            throw new JournalVerificationException("malformed: the proof's " + field + " is not a non-negative integer");
        }
        return ((Number) v).longValue();
    }

    private static void checkHashes(List<byte[]> hashes) {
        if (hashes == null) {
            throw new JournalVerificationException("malformed: no proof hashes");
        }
        for (byte[] h : hashes) {
            if (h == null || h.length != HASH_SIZE) {
                throw new JournalVerificationException("malformed: a proof hash is not 32 bytes");
            }
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static String b64(byte[] b) {
        return Base64.getEncoder().encodeToString(b);
    }
}
