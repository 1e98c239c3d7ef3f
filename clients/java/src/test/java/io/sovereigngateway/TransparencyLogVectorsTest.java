package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.function.Executable;

/**
 * The shared vectors, {@code tests/vectors/tlog.json} (read with the library's own JSON reader):
 * every valid case verifies, every bad case fails with its reason prefix. A missing file fails.
 */
class TransparencyLogVectorsTest {
    static final List<String> PREFIXES = List.of("malformed", "bad signature", "untrusted key", "inclusion",
            "consistency");

    static Map<String, Object> v;

    @BeforeAll
    static void load() throws IOException {
        Path p = DemoGateway.repoRoot().resolve("tests/vectors/tlog.json");
        assertTrue(Files.isRegularFile(p), p + " is missing");
        v = Json.parseObject(Files.readString(p, StandardCharsets.UTF_8));
    }

    // ------------------------------------------------------------ JSON helpers

    @SuppressWarnings("unchecked")
    static Map<String, Object> obj(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object o) {
        return o == null ? List.of() : (List<Object>) o;
    }

    static long num(Map<String, Object> m, String k) {
        Object o = m.get(k);
        if (!(o instanceof Long)) {
            fail("vector field " + k + " is not an integer: " + m);
        }
        return (Long) o;
    }

    static String str(Map<String, Object> m, String k) {
        return (String) m.get(k);
    }

    static byte[] b64(String s) {
        return Base64.getDecoder().decode(s);
    }

    static List<byte[]> hashes(Map<String, Object> m) {
        List<byte[]> out = new ArrayList<>();
        for (Object o : list(m.get("hashes"))) {
            out.add(b64((String) o));
        }
        return out;
    }

    static List<String> hashStrings(Map<String, Object> m) {
        List<String> out = new ArrayList<>();
        for (Object o : list(m.get("hashes"))) {
            out.add((String) o);
        }
        return out;
    }

    /** The case's stated reason prefix, if it names one ({@code reason}/{@code expect}/{@code error} or its {@code why}). */
    static String statedPrefix(Map<String, Object> c) {
        for (String k : List.of("reason", "expect", "expected", "error", "why")) {
            Object o = c.get(k);
            if (o instanceof String) {
                for (String p : PREFIXES) {
                    if (((String) o).startsWith(p)) {
                        return p;
                    }
                }
            }
        }
        return null;
    }

    static String name(Map<String, Object> c, int i) {
        Object why = c.get("why");
        return "#" + i + (why == null ? "" : " " + why);
    }

    static void assertFails(List<String> allowed, Map<String, Object> c, Executable e) {
        JournalVerificationException x = assertThrows(JournalVerificationException.class, e, "must fail: " + c);
        String stated = statedPrefix(c);
        List<String> want = stated != null ? List.of(stated) : allowed;
        assertTrue(want.stream().anyMatch(x.reason()::startsWith),
                "expected a reason starting with " + want + ", got: " + x.reason() + " (case " + c + ")");
    }

    // ------------------------------------------------------------ Merkle trees

    static Stream<DynamicTest> tree(String section) {
        Map<String, Object> t = obj(v.get(section));
        assertTrue(t != null, "no section " + section);
        List<byte[]> leaves = new ArrayList<>();
        for (Object o : list(t.get("leaves_hex"))) {
            leaves.add(JournalVerifier.hex((String) o));
        }
        Map<Long, byte[]> roots = new HashMap<>();
        List<DynamicTest> tests = new ArrayList<>();
        for (Object o : list(t.get("roots"))) {
            Map<String, Object> r = obj(o);
            long n = num(r, "tree_size");
            byte[] root = b64(str(r, "root_hash"));
            roots.put(n, root);
            tests.add(DynamicTest.dynamicTest(section + " root of " + n,
                    () -> assertArrayEquals(root, TransparencyLogTest.mth(leaves.subList(0, (int) n)))));
        }
        assertFalse(roots.isEmpty(), section + ": no roots");
        int i = 0;
        for (Object o : list(t.get("inclusion"))) {
            Map<String, Object> c = obj(o);
            long index = num(c, "leaf_index");
            long n = num(c, "tree_size");
            tests.add(DynamicTest.dynamicTest(section + " inclusion #" + i++ + " " + index + " in " + n, () -> {
                byte[] leaf = TransparencyLog.leafHash(leaves.get((int) index));
                assertArrayEquals(roots.get(n), TransparencyLog.rootFromInclusion(leaf, index, n, hashes(c)));
                TransparencyLog.verifyInclusionProof(leaf, index, n, hashes(c), roots.get(n));
            }));
        }
        i = 0;
        for (Object o : list(t.get("consistency"))) {
            Map<String, Object> c = obj(o);
            long m = num(c, "from");
            long n = num(c, "to");
            tests.add(DynamicTest.dynamicTest(section + " consistency #" + i++ + " " + m + " to " + n,
                    () -> TransparencyLog.verifyConsistencyProof(m, n, roots.get(m), roots.get(n), hashes(c))));
        }
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> rfc9162() {
        return tree("rfc9162");
    }

    @TestFactory
    Stream<DynamicTest> generated() {
        return tree("generated");
    }

    @TestFactory
    Stream<DynamicTest> badInclusion() {
        List<DynamicTest> tests = new ArrayList<>();
        int i = 0;
        for (Object o : list(v.get("bad_inclusion"))) {
            Map<String, Object> c = obj(o);
            tests.add(DynamicTest.dynamicTest("bad_inclusion " + name(c, i++), () -> assertFails(
                    List.of("inclusion", "malformed"), c, () -> TransparencyLog.verifyInclusionProof(
                            TransparencyLog.leafHash(JournalVerifier.hex(str(c, "leaf_hex"))), num(c, "leaf_index"),
                            num(c, "tree_size"), TransparencyLog.decodeHashes(hashStrings(c)),
                            b64(str(c, "root_hash"))))));
        }
        assertFalse(tests.isEmpty(), "no bad_inclusion cases");
        return tests.stream();
    }

    @TestFactory
    Stream<DynamicTest> badConsistency() {
        List<DynamicTest> tests = new ArrayList<>();
        int i = 0;
        for (Object o : list(v.get("bad_consistency"))) {
            Map<String, Object> c = obj(o);
            tests.add(DynamicTest.dynamicTest("bad_consistency " + name(c, i++), () -> assertFails(
                    List.of("consistency", "malformed"), c, () -> TransparencyLog.verifyConsistencyProof(
                            num(c, "from"), num(c, "to"), b64(str(c, "root1")), b64(str(c, "root2")),
                            TransparencyLog.decodeHashes(hashStrings(c))))));
        }
        assertFalse(tests.isEmpty(), "no bad_consistency cases");
        return tests.stream();
    }

    // ------------------------------------------------------------ notes

    @TestFactory
    Stream<DynamicTest> notes() {
        Map<String, Object> notes = obj(v.get("notes"));
        List<DynamicTest> tests = new ArrayList<>();
        int i = 0;
        for (Object o : list(notes.get("valid"))) {
            Map<String, Object> c = obj(o);
            tests.add(DynamicTest.dynamicTest("valid note #" + i++, () -> {
                TransparencyLog.VerifiedCheckpoint cp = TransparencyLog.verifyCheckpoint(str(c, "note"), str(c, "vkey"));
                assertEquals(str(c, "origin"), cp.origin());
                assertEquals(num(c, "tree_size"), cp.treeSize());
                assertArrayEquals(b64(str(c, "root_hash")), cp.rootHash());
            }));
        }
        i = 0;
        for (Object o : list(notes.get("invalid"))) {
            Map<String, Object> c = obj(o);
            tests.add(DynamicTest.dynamicTest("invalid note " + name(c, i++), () -> assertFails(
                    List.of("malformed", "bad signature", "untrusted key"), c,
                    () -> TransparencyLog.verifyCheckpoint(str(c, "note"), str(c, "vkey")))));
        }
        return tests.stream();
    }

    // ------------------------------------------------------------ journal, end to end

    @TestFactory
    Stream<DynamicTest> journal() {
        Map<String, Object> j = obj(v.get("journal"));
        String vkey = str(j, "vkey");
        List<String> lines = new ArrayList<>();
        for (Object o : list(j.get("lines"))) {
            lines.add((String) o);
        }
        Map<Long, String> notes = new HashMap<>();
        for (Object o : list(j.get("checkpoints"))) {
            notes.put(num(obj(o), "tree_size"), str(obj(o), "note"));
        }
        List<DynamicTest> tests = new ArrayList<>();
        for (Map.Entry<Long, String> n : notes.entrySet()) {
            tests.add(DynamicTest.dynamicTest("journal checkpoint of " + n.getKey(),
                    () -> assertEquals((long) n.getKey(), TransparencyLog.verifyCheckpoint(n.getValue(), vkey).treeSize())));
        }
        int i = 0;
        for (Object o : list(j.get("inclusion"))) {
            Map<String, Object> c = obj(o);
            long index = num(c, "leaf_index");
            long n = num(c, "tree_size");
            tests.add(DynamicTest.dynamicTest("journal inclusion #" + i++ + " " + index + " in " + n, () -> {
                InclusionProof p = new InclusionProof(c);
                assertTrue(notes.containsKey(n), "no checkpoint of size " + n);
                assertEquals(n, TransparencyLog.verifyInclusion(lines.get((int) index), p, notes.get(n), vkey).treeSize());
                TransparencyLog.verifyInclusion(lines.get((int) index) + "\n", p, notes.get(n), vkey);
                TransparencyLog.verifyInclusion(lines.get((int) index).getBytes(StandardCharsets.UTF_8), p, notes.get(n), vkey);
            }));
        }
        i = 0;
        for (Object o : list(j.get("consistency"))) {
            Map<String, Object> c = obj(o);
            long m = num(c, "from");
            long n = num(c, "to");
            tests.add(DynamicTest.dynamicTest("journal consistency #" + i++ + " " + m + " to " + n, () -> {
                assertTrue(notes.containsKey(m) && notes.containsKey(n), "no checkpoints of sizes " + m + ", " + n);
                assertEquals(n, TransparencyLog.verifyConsistency(notes.get(m), notes.get(n), new ConsistencyProof(c), vkey)
                        .treeSize());
            }));
        }
        i = 0;
        for (Object o : list(j.get("bad"))) {
            Map<String, Object> c = obj(o);
            String kind = str(c, "kind");
            tests.add(DynamicTest.dynamicTest("journal bad " + kind + " " + name(c, i++), () -> {
                String key = c.get("vkey") instanceof String ? str(c, "vkey") : vkey;
                if ("inclusion".equals(kind)) {
                    Map<String, Object> proof = c.get("proof") instanceof Map ? obj(c.get("proof")) : c;
                    long index = num(proof, "leaf_index");
                    long n = num(proof, "tree_size");
                    String line = c.get("line") instanceof String ? str(c, "line") : lines.get((int) index);
                    String note = c.get("note") instanceof String ? str(c, "note") : notes.get(n);
                    assertFails(List.of("inclusion", "malformed", "bad signature", "untrusted key"), c,
                            () -> TransparencyLog.verifyInclusion(line, new InclusionProof(proof), note, key));
                } else if ("consistency".equals(kind)) {
                    Map<String, Object> proof = c.get("proof") instanceof Map ? obj(c.get("proof")) : c;
                    long m = num(proof, "from");
                    long n = num(proof, "to");
                    String oldNote = c.get("old_note") instanceof String ? str(c, "old_note") : notes.get(m);
                    String newNote = c.get("new_note") instanceof String ? str(c, "new_note") : notes.get(n);
                    assertFails(List.of("consistency", "malformed", "bad signature", "untrusted key"), c,
                            () -> TransparencyLog.verifyConsistency(oldNote, newNote, new ConsistencyProof(proof), key));
                } else {
                    fail("unknown kind " + kind + ": " + c);
                }
            }));
        }
        return tests.stream();
    }
}
