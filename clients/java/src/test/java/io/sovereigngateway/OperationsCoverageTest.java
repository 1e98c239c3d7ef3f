package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Every operation clients/openapi.json marks for the clients is in Operations.MAP, and back. */
class OperationsCoverageTest {
    static Path openapi() {
        Path p = Paths.get("").toAbsolutePath().resolve("../openapi.json").normalize();
        return Files.exists(p) ? p : DemoGateway.repoRoot().resolve("clients/openapi.json");
    }

    @Test
    @SuppressWarnings("unchecked")
    void tableMatchesTheDocument() throws Exception {
        Path p = openapi();
        Assumptions.assumeTrue(Files.exists(p), "clients/openapi.json does not exist yet");
        Map<String, Object> doc = Json.parseObject(Files.readString(p));
        TreeSet<String> marked = new TreeSet<>();
        for (Object item : ((Map<String, Object>) doc.get("paths")).values()) {
            for (Object op : ((Map<String, Object>) item).values()) {
                if (op instanceof Map && Boolean.TRUE.equals(((Map<String, Object>) op).get("x-sovereign-client"))) {
                    marked.add((String) ((Map<String, Object>) op).get("operationId"));
                }
            }
        }
        assertTrue(marked.size() > 0, "no operation is marked x-sovereign-client");
        assertEquals(marked, new TreeSet<>(Operations.MAP.keySet()),
                "operations marked in openapi.json vs. Operations.MAP");
    }

    @Test
    void everyNamedMethodExists() throws Exception {
        List<String> missing = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : Operations.MAP.entrySet()) {
            assertTrue(!e.getValue().isEmpty(), e.getKey() + " names no method");
            for (String ref : e.getValue()) {
                String[] parts = ref.split("#");
                Class<?> c = Class.forName("io.sovereigngateway." + parts[0]);
                boolean found = false;
                for (Method m : c.getMethods()) {
                    found |= m.getName().equals(parts[1]) && Modifier.isPublic(m.getModifiers())
                            && !Modifier.isStatic(m.getModifiers());
                }
                if (!found || !Modifier.isPublic(c.getModifiers())) {
                    missing.add(e.getKey() + " -> " + ref);
                }
            }
        }
        assertEquals(List.of(), missing);
    }
}
