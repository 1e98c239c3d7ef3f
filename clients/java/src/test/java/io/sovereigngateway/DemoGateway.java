package io.sovereigngateway;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A {@code sovereign demo} started once per test JVM (and one more with {@code --tls} when a
 * test asks), on a free port in a temporary data dir; stopped by a shutdown hook.
 */
final class DemoGateway {
    static final Duration START_DEADLINE = Duration.ofSeconds(90);

    private static DemoGateway plain;
    private static DemoGateway tls;
    /** A failed start is not retried by every test class. */
    private static RuntimeException plainFailure;
    private static RuntimeException tlsFailure;

    final Process process;
    final Path dataDir;
    final String baseUrl;
    final String adminKey;
    final String memberKey;
    final String auditorKey;
    final Path tlsCa;
    final Path log;

    static synchronized DemoGateway get() {
        if (plainFailure != null) {
            throw plainFailure;
        }
        if (plain == null) {
            try {
                plain = start(false);
            } catch (RuntimeException e) {
                plainFailure = e;
                throw e;
            }
        }
        return plain;
    }

    static synchronized DemoGateway tls() {
        if (tlsFailure != null) {
            throw tlsFailure;
        }
        if (tls == null) {
            try {
                tls = start(true);
            } catch (RuntimeException e) {
                tlsFailure = e;
                throw e;
            }
        }
        return tls;
    }

    static Path binary() {
        String b = System.getenv("SOVEREIGN_BIN");
        Path p = b == null || b.isBlank() ? repoRoot().resolve("target").resolve("debug").resolve("sovereign")
                : Paths.get(b);
        if (!Files.isExecutable(p)) {
            throw new IllegalStateException("the gateway binary " + p + " is missing: build it (cargo build) "
                    + "or set SOVEREIGN_BIN");
        }
        return p;
    }

    /** The repository root (…/clients/java → …). */
    static Path repoRoot() {
        Path here = Paths.get("").toAbsolutePath();
        for (Path p = here; p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("host")) && Files.isDirectory(p.resolve("clients"))) {
                return p;
            }
        }
        throw new IllegalStateException("run the tests from inside the repository (no host/ and clients/ above "
                + here + ")");
    }

    private DemoGateway(Process process, Path dataDir, Path log, Map<String, String> seen) {
        this.process = process;
        this.dataDir = dataDir;
        this.log = log;
        this.baseUrl = seen.get("listening");
        this.adminKey = seen.get("admin");
        this.memberKey = seen.get("member");
        this.auditorKey = seen.get("auditor");
        this.tlsCa = seen.containsKey("tls") ? Paths.get(seen.get("tls")) : null;
    }

    private static DemoGateway start(boolean withTls) {
        Path bin = binary();
        try {
            Path dir = Files.createTempDirectory("sovereign-java-" + (withTls ? "tls-" : ""));
            Path log = dir.resolve("gateway.log");
            int port;
            try (ServerSocket s = new ServerSocket(0)) {
                port = s.getLocalPort();
            }
            List<String> cmd = new ArrayList<>(List.of(bin.toString(), "demo", "--listen", "127.0.0.1:" + port,
                    "--data-dir", dir.resolve("data").toString()));
            if (withTls) {
                cmd.add("--tls");
            }
            ProcessBuilder pb = new ProcessBuilder(cmd).directory(repoRoot().toFile())
                    .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
            Process p = pb.start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(p, dir)));
            Map<String, String> seen = new ConcurrentHashMap<>();
            CountDownLatch listening = new CountDownLatch(1);
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        String[] f = line.trim().split("\\s+");
                        if (f.length == 3 && f[0].equals("key")) {
                            seen.put(f[1], f[2]);
                        } else if (f.length == 3 && f[0].equals("tls") && f[1].equals("ca")) {
                            seen.put("tls", f[2]);
                        } else if (f.length == 3 && f[0].equals("listening") && f[1].equals("on")) {
                            seen.put("listening", f[2]);
                            listening.countDown();
                        }
                    }
                } catch (IOException e) {
                    // the process ended
                } finally {
                    listening.countDown();
                }
            }, "demo-stdout");
            reader.setDaemon(true);
            reader.start();
            if (!listening.await(START_DEADLINE.toSeconds(), TimeUnit.SECONDS) || !seen.containsKey("listening")) {
                p.destroyForcibly();
                throw new IllegalStateException("sovereign demo did not print `listening on` within "
                        + START_DEADLINE + "; log:\n" + tail(log));
            }
            for (String k : List.of("admin", "member", "auditor")) {
                if (!seen.containsKey(k)) {
                    throw new IllegalStateException("sovereign demo printed no `key " + k + "` line");
                }
            }
            return new DemoGateway(p, dir.resolve("data"), log, seen);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    private static void stop(Process p, Path dir) {
        p.destroy();
        try {
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
        }
        if (System.getenv("KEEP_DEMO_DIR") == null) {
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            } catch (IOException e) {
                // best effort
            }
        }
    }

    SovereignClient client(String key) {
        return SovereignClient.builder().baseUrl(baseUrl).apiKey(key).timeout(Duration.ofSeconds(30)).build();
    }

    SovereignClient admin() {
        return client(adminKey);
    }

    SovereignClient member() {
        return client(memberKey);
    }

    SovereignClient auditor() {
        return client(auditorKey);
    }
}
