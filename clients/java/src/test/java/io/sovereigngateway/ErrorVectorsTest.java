package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The shared error vectors ({@code tests/vectors/errors.json}, clients/SPEC.md "Errors"): every
 * answer raises exactly the kind it names, an instance of each ancestor, keeping the listed fields.
 */
class ErrorVectorsTest {
    static final Map<String, Class<? extends SovereignException>> KINDS = new LinkedHashMap<>();

    static {
        KINDS.put("StatusError", SovereignException.class);
        KINDS.put("BadRequest", BadRequestException.class);
        KINDS.put("GuardrailViolation", GuardrailViolationException.class);
        KINDS.put("Authentication", AuthenticationException.class);
        KINDS.put("PermissionDenied", PermissionDeniedException.class);
        KINDS.put("NotFound", NotFoundException.class);
        KINDS.put("Conflict", ConflictException.class);
        KINDS.put("PayloadTooLarge", PayloadTooLargeException.class);
        KINDS.put("UnprocessableEntity", UnprocessableEntityException.class);
        KINDS.put("DataResidency", ResidencyException.class);
        KINDS.put("RateLimit", RateLimitException.class);
        KINDS.put("BudgetExceeded", BudgetExceededException.class);
        KINDS.put("InternalServer", ServerException.class);
        KINDS.put("ServiceUnavailable", ServiceUnavailableException.class);
    }

    static Map<String, Object> vectors;
    static HttpServer server;
    static final AtomicReference<Map<?, ?>> current = new AtomicReference<>();

    @BeforeAll
    static void start() throws IOException {
        vectors = Json.parseObject(Files.readString(
                DemoGateway.repoRoot().resolve("tests").resolve("vectors").resolve("errors.json")));
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", ex -> {
            ex.getRequestBody().readAllBytes();
            Map<?, ?> v = current.get();
            Object body = v.get("body");
            byte[] b = (body instanceof String ? (String) body : Json.write(body)).getBytes(StandardCharsets.UTF_8);
            ((Map<?, ?>) v.get("headers")).forEach((k, val) -> ex.getResponseHeaders().set((String) k, (String) val));
            if (!(body instanceof String)) {
                ex.getResponseHeaders().set("Content-Type", "application/json");
            }
            ex.sendResponseHeaders(((Number) v.get("status")).intValue(), b.length == 0 ? -1 : b.length);
            try (OutputStream o = ex.getResponseBody()) {
                o.write(b);
            }
        });
        server.start();
    }

    @AfterAll
    static void stop() {
        server.stop(0);
    }

    @Test
    void theTableNamesExactlyTheSharedKinds() {
        Map<?, ?> kinds = (Map<?, ?>) vectors.get("kinds");
        assertEquals(kinds.keySet(), KINDS.keySet());
        kinds.forEach((kind, parent) -> {
            if (parent != null) {
                assertSame(KINDS.get(parent), KINDS.get(kind).getSuperclass(), kind + " < " + parent);
            }
        });
    }

    @TestFactory
    Stream<DynamicTest> everyVector() {
        Map<?, ?> kinds = (Map<?, ?>) vectors.get("kinds");
        List<DynamicTest> tests = new ArrayList<>();
        for (Object o : (List<?>) vectors.get("vectors")) {
            Map<?, ?> v = (Map<?, ?>) o;
            tests.add(DynamicTest.dynamicTest((String) v.get("name"), () -> {
                current.set(v);
                SovereignClient client = SovereignClient.builder()
                        .baseUrl("http://127.0.0.1:" + server.getAddress().getPort()).apiKey("sk-test")
                        .maxRetries(0).timeout(Duration.ofSeconds(10)).build();
                SovereignException e = assertThrows(SovereignException.class, () -> client.models().list());
                String kind = (String) v.get("kind");
                assertSame(KINDS.get(kind), e.getClass(), e.toString());
                assertEquals(kinds.get(kind), v.get("parent"));
                for (Object p = kinds.get(kind); p != null; p = kinds.get(p)) {
                    assertTrue(KINDS.get(p).isInstance(e), "not a " + p);
                }
                Map<String, Object> got = new LinkedHashMap<>();
                got.put("status", (long) e.status());
                got.put("type", e.type());
                got.put("code", e.code());
                got.put("param", e.param());
                got.put("message", e.message());
                got.put("audit_trace_id", e.auditTraceId());
                Duration after = e instanceof RateLimitException ? ((RateLimitException) e).retryAfter() : null;
                got.put("retry_after", after == null ? null : after.getSeconds());
                ((Map<?, ?>) v.get("fields")).forEach((name, want) ->
                        assertEquals(want, got.get(name), String.valueOf(name)));
            }));
        }
        return tests.stream();
    }
}
