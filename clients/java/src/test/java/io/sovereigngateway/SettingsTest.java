package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A client of the gateway uses only its own settings (SOVEREIGN_* or the builder), never
 * OPENAI_*, and fails clearly without a key (issue 49, bug 1). The environment is real: the
 * client runs in a child JVM ({@link SettingsProbe}) with OPENAI_API_KEY set and
 * SOVEREIGN_API_KEY unset, against a local server that records what it is sent.
 */
class SettingsTest {
    static final String OPENAI_SECRET = "sk-openai-must-never-leave";

    static final class Run {
        final int exit;
        final String output;

        Run(int exit, String output) {
            this.exit = exit;
            this.output = output;
        }
    }

    static Run probe(Map<String, String> env, String url) throws IOException, InterruptedException {
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        // The probe's and the library's own directories (or jars): java.class.path is the
        // launcher's jar alone under JUnit's console launcher (run-tests --javac).
        String cp = location(SettingsProbe.class) + File.pathSeparator + location(SovereignClient.class);
        ProcessBuilder pb = new ProcessBuilder(java, "-cp", cp, SettingsProbe.class.getName(), url)
                .redirectErrorStream(true);
        pb.environment().remove("SOVEREIGN_API_KEY");
        pb.environment().remove("SOVEREIGN_BASE_URL");
        pb.environment().put("OPENAI_API_KEY", OPENAI_SECRET);
        pb.environment().put("OPENAI_BASE_URL", "http://openai.invalid/v1");
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return new Run(p.exitValue(), out);
    }

    static String location(Class<?> c) {
        try {
            return Paths.get(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void onlySovereignSettingsReachTheGateway() throws Exception {
        List<String> seen = new CopyOnWriteArrayList<>();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", ex -> {
            ex.getRequestBody().readAllBytes();
            seen.add(ex.getRequestHeaders().entrySet().toString());
            byte[] b = "{\"object\":\"list\",\"data\":[]}".getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "application/json");
            ex.sendResponseHeaders(200, b.length);
            try (OutputStream o = ex.getResponseBody()) {
                o.write(b);
            }
        });
        server.start();
        try {
            String url = "http://127.0.0.1:" + server.getAddress().getPort();
            Run none = probe(Map.of(), url);
            assertNotEquals(0, none.exit, none.output);
            assertTrue(none.output.contains("SOVEREIGN_API_KEY"), none.output);
            assertTrue(seen.isEmpty(), "a request was sent without a key: " + seen);

            Run mine = probe(Map.of("SOVEREIGN_API_KEY", "sk-sov-mine"), url);
            assertEquals(0, mine.exit, mine.output);
            assertEquals(1, seen.size());
            assertTrue(seen.get(0).contains("Bearer sk-sov-mine"), seen.get(0));
            assertFalse(seen.get(0).contains(OPENAI_SECRET), seen.get(0));
        } finally {
            server.stop(0);
        }
    }
}
