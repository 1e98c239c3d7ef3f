package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The transparency-log verifiers against an RFC 9162 reference written here (MTH, PATH, PROOF as
 * the RFC defines them, recursively) and notes signed here; the shared vectors are in
 * {@link TransparencyLogVectorsTest}.
 */
class TransparencyLogTest {
    static final Base64.Encoder B64 = Base64.getEncoder();

    // ------------------------------------------------------------ RFC 9162 §2.1, recursively

    static byte[] mth(List<byte[]> d) {
        if (d.isEmpty()) {
            return TransparencyLog.emptyRoot();
        }
        if (d.size() == 1) {
            return TransparencyLog.leafHash(d.get(0));
        }
        int k = split(d.size());
        return TransparencyLog.nodeHash(mth(d.subList(0, k)), mth(d.subList(k, d.size())));
    }

    /** The largest power of two smaller than n. */
    static int split(int n) {
        int k = 1;
        while (k << 1 < n) {
            k <<= 1;
        }
        return k;
    }

    static List<byte[]> path(int m, List<byte[]> d) {
        List<byte[]> out = new ArrayList<>();
        if (d.size() <= 1) {
            return out;
        }
        int k = split(d.size());
        if (m < k) {
            out.addAll(path(m, d.subList(0, k)));
            out.add(mth(d.subList(k, d.size())));
        } else {
            out.addAll(path(m - k, d.subList(k, d.size())));
            out.add(mth(d.subList(0, k)));
        }
        return out;
    }

    static List<byte[]> proof(int m, List<byte[]> d) {
        return subproof(m, d, true);
    }

    static List<byte[]> subproof(int m, List<byte[]> d, boolean b) {
        List<byte[]> out = new ArrayList<>();
        int n = d.size();
        if (m == n) {
            if (!b) {
                out.add(mth(d));
            }
            return out;
        }
        int k = split(n);
        if (m <= k) {
            out.addAll(subproof(m, d.subList(0, k), b));
            out.add(mth(d.subList(k, n)));
        } else {
            out.addAll(subproof(m - k, d.subList(k, n), false));
            out.add(mth(d.subList(0, k)));
        }
        return out;
    }

    static List<byte[]> leaves(int n) {
        List<byte[]> d = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            d.add(("leaf-" + i).getBytes(StandardCharsets.UTF_8));
        }
        return d;
    }

    static void assertReason(String prefix, Executable e) {
        JournalVerificationException x = assertThrows(JournalVerificationException.class, e);
        assertTrue(x.reason().startsWith(prefix), "expected '" + prefix + "...', got: " + x.reason());
        assertEquals(0, x.status());
        assertEquals("journal_verification_error", x.type());
    }

    // ------------------------------------------------------------ notes signed here

    static final class Signer {
        final String name;
        final KeyPair kp;
        final byte[] pub;

        Signer(String name) throws Exception {
            this.name = name;
            this.kp = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
            byte[] enc = kp.getPublic().getEncoded();
            this.pub = Arrays.copyOfRange(enc, enc.length - 32, enc.length);
        }

        String vkey() {
            byte[] typed = new byte[33];
            typed[0] = 1;
            System.arraycopy(pub, 0, typed, 1, 32);
            return name + "+" + JournalVerifier.toHex(TransparencyLog.keyId(name, pub)) + "+" + B64.encodeToString(typed);
        }

        String sigLine(String text) throws Exception {
            Signature s = Signature.getInstance("Ed25519");
            s.initSign(kp.getPrivate());
            s.update(text.getBytes(StandardCharsets.UTF_8));
            byte[] sig = s.sign();
            byte[] all = new byte[68];
            System.arraycopy(TransparencyLog.keyId(name, pub), 0, all, 0, 4);
            System.arraycopy(sig, 0, all, 4, 64);
            return "\u2014 " + name + " " + B64.encodeToString(all) + "\n";
        }

        String note(String text) throws Exception {
            return text + "\n" + sigLine(text);
        }

        String checkpoint(long size, byte[] root) throws Exception {
            return note(name + "\n" + size + "\n" + B64.encodeToString(root) + "\n");
        }
    }

    // ------------------------------------------------------------ tests

    @Test
    void knownAnswerRootsOfTheCtReferenceLeaves() {
        // RFC 6962's reference data (certificate-transparency's merkle_tree_test), tree sizes 1..8
        String[] leafHex = {"", "00", "10", "2021", "3031", "40414243", "5051525354555657",
            "606162636465666768696a6b6c6d6e6f"};
        String[] roots = {
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
            "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
            "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
            "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"};
        List<byte[]> d = new ArrayList<>();
        for (String h : leafHex) {
            d.add(JournalVerifier.hex(h));
        }
        assertEquals("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                JournalVerifier.toHex(TransparencyLog.emptyRoot()));
        for (int n = 1; n <= 8; n++) {
            assertEquals(roots[n - 1], JournalVerifier.toHex(mth(d.subList(0, n))), "root of " + n);
        }
    }

    @Test
    void everyInclusionProofOfTreesUpTo33Verifies() {
        List<byte[]> all = leaves(33);
        for (int n = 1; n <= all.size(); n++) {
            List<byte[]> d = all.subList(0, n);
            byte[] root = mth(d);
            for (int i = 0; i < n; i++) {
                List<byte[]> p = path(i, d);
                byte[] leaf = TransparencyLog.leafHash(d.get(i));
                assertArrayEquals(root, TransparencyLog.rootFromInclusion(leaf, i, n, p), i + " in " + n);
                TransparencyLog.verifyInclusionProof(leaf, i, n, p, root);
                final int fi = i;
                final int fn = n;
                if (i + 1 < n) { // another index
                    assertReason("inclusion", () -> TransparencyLog.verifyInclusionProof(leaf, fi + 1, fn, p, root));
                }
                List<byte[]> longer = new ArrayList<>(p);
                longer.add(root);
                assertReason("inclusion", () -> TransparencyLog.verifyInclusionProof(leaf, fi, fn, longer, root));
                if (!p.isEmpty()) {
                    List<byte[]> shorter = p.subList(0, p.size() - 1);
                    assertReason("inclusion", () -> TransparencyLog.verifyInclusionProof(leaf, fi, fn, shorter, root));
                    List<byte[]> flipped = new ArrayList<>(p);
                    byte[] h = flipped.get(0).clone();
                    h[0] ^= 1;
                    flipped.set(0, h);
                    assertReason("inclusion", () -> TransparencyLog.verifyInclusionProof(leaf, fi, fn, flipped, root));
                }
            }
        }
        byte[] leaf = TransparencyLog.leafHash(new byte[0]);
        assertReason("inclusion", () -> TransparencyLog.rootFromInclusion(leaf, 0, 0, List.of()));
        assertReason("inclusion", () -> TransparencyLog.rootFromInclusion(leaf, 3, 3, List.of()));
        assertReason("malformed", () -> TransparencyLog.rootFromInclusion(leaf, 0, 2, List.of(new byte[31])));
    }

    @Test
    void everyConsistencyProofOfTreesUpTo33Verifies() {
        List<byte[]> all = leaves(33);
        for (int n = 1; n <= all.size(); n++) {
            byte[] root2 = mth(all.subList(0, n));
            for (int m = 1; m <= n; m++) {
                byte[] root1 = mth(all.subList(0, m));
                List<byte[]> p = proof(m, all.subList(0, n));
                TransparencyLog.verifyConsistencyProof(m, n, root1, root2, p);
                final int fm = m;
                final int fn = n;
                assertReason("consistency", () -> TransparencyLog.verifyConsistencyProof(fm, fn, root2.clone(),
                        flip(root2), p));
                if (m < n) {
                    assertReason("consistency", () -> TransparencyLog.verifyConsistencyProof(fm, fn, flip(root1), root2, p));
                    assertReason("consistency", () -> TransparencyLog.verifyConsistencyProof(fm, fn, root1, flip(root2), p));
                    assertReason("consistency", () -> TransparencyLog.verifyConsistencyProof(fm, fn, root1, root2,
                            p.subList(0, p.size() - 1)));
                    List<byte[]> longer = new ArrayList<>(p);
                    longer.add(root1);
                    assertReason("consistency", () -> TransparencyLog.verifyConsistencyProof(fm, fn, root1, root2, longer));
                    List<byte[]> flipped = new ArrayList<>(p);
                    flipped.set(p.size() - 1, flip(p.get(p.size() - 1)));
                    assertReason("consistency", () -> TransparencyLog.verifyConsistencyProof(fm, fn, root1, root2, flipped));
                    assertReason("consistency", () -> TransparencyLog.verifyConsistencyProof(fn, fm, root2, root1, p));
                } else {
                    assertReason("consistency", () -> TransparencyLog.verifyConsistencyProof(fm, fn, root1, root2,
                            List.of(root1)));
                }
            }
        }
        byte[] r = TransparencyLog.emptyRoot();
        assertReason("consistency", () -> TransparencyLog.verifyConsistencyProof(0, 3, r, r, List.of()));
    }

    static byte[] flip(byte[] h) {
        byte[] out = h.clone();
        out[31] ^= 0x80;
        return out;
    }

    @Test
    void checkpointsSignedHere() throws Exception {
        Signer s = new Signer("sovereign-gateway/journal/demo-riyadh-1");
        List<byte[]> d = leaves(5);
        byte[] root = mth(d);
        String note = s.checkpoint(5, root);
        TransparencyLog.VerifiedCheckpoint cp = TransparencyLog.verifyCheckpoint(note, s.vkey());
        assertEquals(s.name, cp.origin());
        assertEquals(5, cp.treeSize());
        assertArrayEquals(root, cp.rootHash());
        assertEquals(cp, TransparencyLog.verifyCheckpoint(note, s.vkey() + "\n"));
        assertEquals(s.vkey(), TransparencyLog.parseVerifierKey(s.vkey()).toString());

        // extension lines, and another key's signature before ours
        Signer witness = new Signer("witness.example");
        String text = s.name + "\n5\n" + B64.encodeToString(root) + "\nextension line\n";
        String cosigned = text + "\n" + witness.sigLine(text) + s.sigLine(text);
        assertEquals(5, TransparencyLog.verifyCheckpoint(cosigned, s.vkey()).treeSize());
        assertEquals(5, TransparencyLog.verifyCheckpoint(
                witness.note(witness.name + "\n5\n" + B64.encodeToString(root) + "\n"), witness.vkey()).treeSize());

        // the empty tree
        assertEquals(0, TransparencyLog.verifyCheckpoint(s.checkpoint(0, TransparencyLog.emptyRoot()), s.vkey()).treeSize());

        Signer impostor = new Signer(s.name); // the same name, another key
        assertReason("untrusted key", () -> TransparencyLog.verifyCheckpoint(impostor.checkpoint(5, root), s.vkey()));
        assertReason("untrusted key", () -> TransparencyLog.verifyCheckpoint(witness.note(text), s.vkey()));
        assertReason("untrusted key", () -> TransparencyLog.verifyCheckpoint(
                s.note("another-origin\n5\n" + B64.encodeToString(root) + "\n"), s.vkey()));
        String edited = note.replaceFirst("\n5\n", "\n6\n");
        assertReason("bad signature", () -> TransparencyLog.verifyCheckpoint(edited, s.vkey()));
        // a well-formed signature line of the right key over other bytes
        String otherSig = s.sigLine(s.name + "\n6\n" + B64.encodeToString(root) + "\n");
        assertReason("bad signature", () -> TransparencyLog.verifyCheckpoint(
                s.name + "\n5\n" + B64.encodeToString(root) + "\n\n" + otherSig, s.vkey()));

        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(s.checkpoint(5, Arrays.copyOf(root, 31)), s.vkey()));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(s.note(s.name + "\n05\n" + B64.encodeToString(root) + "\n"), s.vkey()));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(s.note(s.name + "\n-5\n" + B64.encodeToString(root) + "\n"), s.vkey()));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(s.note(s.name + "\n5\n"), s.vkey()));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(s.note(s.name + "\n5\n" + B64.encodeToString(root) + "\n\nx\n"), s.vkey()));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(s.note(s.name + "\n5\r\n" + B64.encodeToString(root) + "\n"), s.vkey()));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(note.replace("\u2014 ", "- "), s.vkey()));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(note.substring(0, note.length() - 1), s.vkey()));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(note.replace("\n\n", "\n"), s.vkey()));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(note, "not a key"));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(note, s.vkey().replace("+", "+0")));
        StringBuilder many = new StringBuilder(text).append("\n");
        for (int i = 0; i < 16; i++) {
            many.append(witness.sigLine(text));
        }
        many.append(s.sigLine(text));
        assertReason("malformed", () -> TransparencyLog.verifyCheckpoint(many.toString(), s.vkey()));
    }

    @Test
    void inclusionAndConsistencyOfJournalLines() throws Exception {
        Signer s = new Signer("sovereign-gateway/journal/test");
        List<String> lines = JournalVerifierTest.chain(7);
        List<byte[]> d = new ArrayList<>();
        for (String l : lines) {
            d.add(l.getBytes(StandardCharsets.UTF_8));
        }
        String note7 = s.checkpoint(7, mth(d));
        String note4 = s.checkpoint(4, mth(d.subList(0, 4)));
        for (int i = 0; i < 7; i++) {
            InclusionProof p = InclusionProof.of(i, 7, b64(path(i, d)));
            assertEquals(7, TransparencyLog.verifyInclusion(lines.get(i), p, note7, s.vkey()).treeSize());
            TransparencyLog.verifyInclusion(lines.get(i) + "\n", p, note7, s.vkey());
            final int fi = i;
            assertReason("inclusion", () -> TransparencyLog.verifyInclusion(lines.get(fi).replace("success", "error"), p,
                    note7, s.vkey()));
            assertReason("inclusion", () -> TransparencyLog.verifyInclusion(lines.get(fi), p, note4, s.vkey()));
        }
        InclusionProof in4 = new InclusionProof(Json.parseObject(
                "{\"leaf_index\":2,\"tree_size\":4,\"hashes\":" + Json.write(b64(path(2, d.subList(0, 4)))) + "}"));
        TransparencyLog.verifyInclusion(lines.get(2), in4, note4, s.vkey());
        assertReason("malformed", () -> TransparencyLog.verifyInclusion(lines.get(2),
                new InclusionProof(Json.parseObject("{\"leaf_index\":2,\"tree_size\":4,\"hashes\":[\"!!\"]}")), note4, s.vkey()));
        assertReason("malformed", () -> TransparencyLog.verifyInclusion(lines.get(2),
                new InclusionProof(Json.parseObject("{\"leaf_index\":\"2\",\"tree_size\":4,\"hashes\":[]}")), note4, s.vkey()));

        ConsistencyProof c = ConsistencyProof.of(4, 7, b64(proof(4, d)));
        assertEquals(7, TransparencyLog.verifyConsistency(note4, note7, c, s.vkey()).treeSize());
        assertReason("consistency", () -> TransparencyLog.verifyConsistency(note7, note4, c, s.vkey()));
        // a fork: a size-4 checkpoint over other entries
        List<byte[]> forked = new ArrayList<>(d.subList(0, 4));
        forked.set(1, "forked".getBytes(StandardCharsets.UTF_8));
        String fork4 = s.checkpoint(4, mth(forked));
        assertReason("consistency", () -> TransparencyLog.verifyConsistency(fork4, note7, c, s.vkey()));
        assertEquals(4, TransparencyLog.verifyConsistency(note4, note4, ConsistencyProof.of(4, 4, List.of()), s.vkey())
                .treeSize());
        assertReason("consistency", () -> TransparencyLog.verifyConsistency(note4, fork4, ConsistencyProof.of(4, 4, List.of()), s.vkey()));
        Signer other = new Signer(s.name);
        assertReason("untrusted key", () -> TransparencyLog.verifyConsistency(other.checkpoint(4, mth(d.subList(0, 4))), note7, c,
                s.vkey()));
    }

    static List<String> b64(List<byte[]> hashes) {
        List<String> out = new ArrayList<>();
        for (byte[] h : hashes) {
            out.add(B64.encodeToString(h));
        }
        return out;
    }
}
