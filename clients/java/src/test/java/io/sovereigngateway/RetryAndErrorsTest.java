package io.sovereigngateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Error mapping and the retry policy against a scripted local server (no gateway needed). */
class RetryAndErrorsTest {
    /** One scripted answer. */
    static final class Reply {
        final int status;
        final String body;
        final Map<String, String> headers;

        Reply(int status, String body, Map<String, String> headers) {
            this.status = status;
            this.body = body;
            this.headers = headers;
        }
    }

    HttpServer server;
    final Deque<Reply> script = new ArrayDeque<>();
    final AtomicInteger calls = new AtomicInteger();

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", ex -> {
            calls.incrementAndGet();
            ex.getRequestBody().readAllBytes();
            Reply r;
            synchronized (script) {
                r = script.size() > 1 ? script.poll() : script.peek();
            }
            byte[] b = r.body.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "application/json");
            ex.getResponseHeaders().set("X-Audit-Trace-ID", "trace-" + calls.get());
            ex.getResponseHeaders().set("X-Sovereign-ID", "test-1");
            r.headers.forEach(ex.getResponseHeaders()::set);
            ex.sendResponseHeaders(r.status, b.length);
            try (OutputStream o = ex.getResponseBody()) {
                o.write(b);
            }
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    SovereignClient client(int retries) {
        return SovereignClient.builder().baseUrl("http://127.0.0.1:" + server.getAddress().getPort() + "/v1/")
                .apiKey("sk-test").maxRetries(retries).timeout(Duration.ofSeconds(10)).build();
    }

    static String err(String type, String code, String message) {
        return "{\"error\":{\"message\":\"" + message + "\",\"type\":\"" + type + "\",\"param\":null,\"code\":"
                + (code == null ? "null" : "\"" + code + "\"") + "}}";
    }

    void reply(int status, String body, Map<String, String> headers) {
        script.add(new Reply(status, body, headers));
    }

    static final String OK_MODELS = "{\"object\":\"list\",\"data\":[{\"id\":\"m\",\"object\":\"model\",\"family\":\"f\",\"languages\":[\"ar\"],\"region\":\"r\"}]}";

    static ChatCompletionRequest chat() {
        return ChatCompletionRequest.builder().model("m").addUserMessage("hi").build();
    }

    @Test
    void retries503ThenSucceeds() {
        reply(503, err("server_error", "store_unavailable", "down"), Map.of("Retry-After", "0"));
        reply(503, err("server_error", "store_unavailable", "down"), Map.of("Retry-After", "0"));
        reply(200, OK_MODELS, Map.of());
        assertEquals("ar", client(2).models().list().get(0).languages().get(0));
        assertEquals(3, calls.get());
    }

    @Test
    void givesUpAfterMaxRetriesAndZeroDisables() {
        reply(502, err("server_error", null, "bad gateway"), Map.of("Retry-After", "0"));
        ServerException e = assertThrows(ServerException.class, () -> client(2).models().list());
        assertEquals(502, e.status());
        assertEquals(3, calls.get());
        calls.set(0);
        assertThrows(ServerException.class, () -> client(0).models().list());
        assertEquals(1, calls.get());
    }

    @Test
    void rateLimitIsRetriedAndCarriesRetryAfter() {
        reply(429, err("rate_limit_exceeded", "rate_limit_exceeded", "slow down"),
                Map.of("Retry-After", "0", "X-RateLimit-Reset", "1790000000"));
        RateLimitException e = assertThrows(RateLimitException.class, () -> client(1).models().list());
        assertEquals(Duration.ZERO, e.retryAfter());
        assertEquals(1790000000L, e.reset().getEpochSecond());
        assertEquals(2, calls.get());
        assertEquals("trace-2", e.auditTraceId());
    }

    @Test
    void budgetAndGuardrailAreNeverRetried() {
        reply(429, err("insufficient_quota", "insufficient_quota", "budget spent"), Map.of("Retry-After", "0"));
        BudgetExceededException b = assertThrows(BudgetExceededException.class, () -> client(2).chat().create(chat()));
        assertEquals(429, b.status());
        assertEquals(1, calls.get());
        script.clear();
        calls.set(0);
        reply(400, err("guardrail_violation", "pii_detected", "card"), Map.of());
        GuardrailViolationException g = assertThrows(GuardrailViolationException.class, () -> client(2).chat().create(chat()));
        assertInstanceOf(BadRequestException.class, g);
        assertEquals("pii_detected", g.code());
        assertEquals(1, calls.get());
    }

    @Test
    void nonIdempotentAdminCallsAreNotRetriedOn5xxButAreOn429() {
        reply(503, err("server_error", null, "down"), Map.of("Retry-After", "0"));
        assertThrows(ServiceUnavailableException.class, () -> client(2).admin().teams().create("t"));
        assertEquals(1, calls.get());
        script.clear();
        calls.set(0);
        reply(429, err("rate_limit_exceeded", null, "slow"), Map.of("Retry-After", "0"));
        reply(201, "{\"id\":\"team_1\",\"object\":\"team\",\"name\":\"t\"}", Map.of());
        assertEquals("team_1", client(2).admin().teams().create("t").id());
        assertEquals(2, calls.get());
    }

    @Test
    void statusMapping() {
        Object[][] cases = {
            {400, "invalid_request_error", null, BadRequestException.class},
            {401, "authentication_error", "revoked_api_key", AuthenticationException.class},
            {403, "permission_error", null, PermissionDeniedException.class},
            {404, "invalid_request_error", "model_not_found", NotFoundException.class},
            {409, "invalid_request_error", null, ConflictException.class},
            {413, "invalid_request_error", "request_too_large", PayloadTooLargeException.class},
            {422, "invalid_request_error", "no_text_layer", UnprocessableEntityException.class},
            {451, "sovereignty_error", "sensitive_requires_local", ResidencyException.class},
            {500, "server_error", null, ServerException.class},
            {503, "server_error", null, ServiceUnavailableException.class},
            {415, "invalid_request_error", "unsupported_file_type", SovereignException.class},
        };
        for (Object[] c : cases) {
            script.clear();
            reply((Integer) c[0], err((String) c[1], (String) c[2], "m"), Map.of());
            SovereignException e = assertThrows(SovereignException.class, () -> client(0).chat().create(chat()));
            assertEquals(c[3], e.getClass(), "status " + c[0]);
            assertEquals((int) (Integer) c[0], e.status());
            assertEquals(c[1], e.type());
            assertEquals(c[2], e.code());
            assertEquals("m", e.getMessage());
            assertTrue(e.auditTraceId().startsWith("trace-"));
        }
    }

    @Test
    void asyncCreateMapsErrorsAndRetries() throws Exception {
        reply(504, err("server_error", null, "timeout"), Map.of("Retry-After", "0"));
        reply(200, "{\"id\":\"c\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hey\"}}]}",
                Map.of("X-Route-Policy", "p", "X-Data-Residency", "r"));
        ChatCompletion c = client(1).chat().createAsync(chat()).get();
        assertEquals("hey", c.content());
        assertEquals("r", c.sovereignty().dataResidency());
        assertEquals("test-1", c.sovereignty().sovereignId());
        script.clear();
        reply(451, err("sovereignty_error", "sensitive_requires_local", "no"), Map.of());
        ExecutionException e = assertThrows(ExecutionException.class, () -> client(1).chat().createAsync(chat()).get());
        assertInstanceOf(ResidencyException.class, e.getCause());
    }

    @Test
    void connectionRefusedIsAConnectionError() {
        int port = server.getAddress().getPort();
        server.stop(0);
        SovereignClient c = SovereignClient.builder().baseUrl("http://127.0.0.1:" + port).apiKey("k").maxRetries(1).build();
        ConnectionException e = assertThrows(ConnectionException.class, () -> c.models().list());
        assertEquals(0, e.status());
    }
}
