package io.sovereigngateway;

import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;

/** Sends requests: headers, retries with backoff, error mapping. Internal. */
final class HttpTransport {
    static final String VERSION = "0.1.0";
    private static final Duration MAX_WAIT = Duration.ofSeconds(60);

    final HttpClient http;
    final String baseUrl;
    final String apiKey;
    final int maxRetries;
    final Duration timeout;
    final Map<String, String> defaultHeaders;

    HttpTransport(HttpClient http, String baseUrl, String apiKey, int maxRetries, Duration timeout,
            Map<String, String> defaultHeaders) {
        this.http = http;
        this.baseUrl = baseUrl;
        this.apiKey = apiKey;
        this.maxRetries = maxRetries;
        this.timeout = timeout;
        this.defaultHeaders = defaultHeaders;
    }

    /** One call's description. */
    static final class Call {
        final String method;
        final String path;
        final Map<String, Object> query = new LinkedHashMap<>();
        final Map<String, String> headers = new LinkedHashMap<>();
        byte[] body;
        String contentType;
        /** May be sent again after it reached the gateway (5xx, a dropped connection). */
        boolean retryable = true;

        Call(String method, String path) {
            this.method = method;
            this.path = path;
        }

        static Call get(String path) {
            return new Call("GET", path);
        }

        static Call delete(String path) {
            return new Call("DELETE", path);
        }

        static Call json(String method, String path, Object body) {
            Call c = new Call(method, path);
            c.body = Json.write(body).getBytes(StandardCharsets.UTF_8);
            c.contentType = "application/json";
            return c;
        }

        Call query(String k, Object v) {
            if (v != null) {
                query.put(k, v);
            }
            return this;
        }

        Call header(String k, String v) {
            if (v != null) {
                headers.put(k, v);
            }
            return this;
        }

        Call notRetryable() {
            retryable = false;
            return this;
        }
    }

    /** A whole answer. */
    static final class Answer {
        final int status;
        final HttpHeaders headers;
        final String body;

        Answer(int status, HttpHeaders headers, String body) {
            this.status = status;
            this.headers = headers;
            this.body = body;
        }

        Sovereignty sovereignty() {
            return Sovereignty.from(headers);
        }

        Map<String, Object> object() {
            try {
                return Json.parseObject(body);
            } catch (Json.ParseException e) {
                throw new SovereignException("The gateway's answer is not a JSON object: " + e.getMessage(),
                        status, "invalid_response", null, null,
                        headers.firstValue("x-audit-trace-id").orElse(null), e);
            }
        }
    }

    static String seg(String id) {
        if (id == null || id.isEmpty()) {
            throw new IllegalArgumentException("an id is required");
        }
        return URLEncoder.encode(id, StandardCharsets.UTF_8).replace("+", "%20");
    }

    HttpRequest build(Call c) {
        StringBuilder url = new StringBuilder(baseUrl).append(c.path);
        char sep = '?';
        for (Map.Entry<String, Object> q : c.query.entrySet()) {
            url.append(sep).append(URLEncoder.encode(q.getKey(), StandardCharsets.UTF_8)).append('=')
                    .append(URLEncoder.encode(String.valueOf(q.getValue()), StandardCharsets.UTF_8));
            sep = '&';
        }
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url.toString()))
                .timeout(timeout)
                .header("User-Agent", "sovereign-client-java/" + VERSION)
                .header("Accept", "application/json");
        if (apiKey != null) {
            b.header("Authorization", "Bearer " + apiKey);
        }
        defaultHeaders.forEach(b::setHeader);
        if (c.contentType != null) {
            b.header("Content-Type", c.contentType);
        }
        c.headers.forEach(b::setHeader);
        HttpRequest.BodyPublisher pub = c.body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(c.body);
        return b.method(c.method, pub).build();
    }

    Answer send(Call c) {
        HttpRequest req = build(c);
        for (int attempt = 0;; attempt++) {
            HttpResponse<String> res;
            try {
                res = http.send(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            } catch (IOException e) {
                if (attempt < maxRetries && retryAfterFailure(c, e)) {
                    sleep(backoff(attempt, null));
                    continue;
                }
                throw connectionError(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ConnectionException("interrupted", 0, "connection_error", null, null, null, e);
            }
            Answer a = new Answer(res.statusCode(), res.headers(), res.body());
            if (a.status < 400) {
                return a;
            }
            SovereignException err = error(a.status, a.headers, a.body);
            if (attempt < maxRetries && retryAfterStatus(c, a.status, a.headers, err)) {
                sleep(backoff(attempt, a.headers));
                continue;
            }
            throw err;
        }
    }

    /** Sends and hands back the open body (for streams); an error answer is read and raised. */
    HttpResponse<InputStream> open(Call c) {
        HttpRequest req = build(c);
        for (int attempt = 0;; attempt++) {
            HttpResponse<InputStream> res;
            try {
                res = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
            } catch (IOException e) {
                if (attempt < maxRetries && retryAfterFailure(c, e)) {
                    sleep(backoff(attempt, null));
                    continue;
                }
                throw connectionError(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ConnectionException("interrupted", 0, "connection_error", null, null, null, e);
            }
            if (res.statusCode() < 400) {
                return res;
            }
            String body;
            try (InputStream in = res.body()) {
                body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                body = "";
            }
            SovereignException err = error(res.statusCode(), res.headers(), body);
            if (attempt < maxRetries && retryAfterStatus(c, res.statusCode(), res.headers(), err)) {
                sleep(backoff(attempt, res.headers()));
                continue;
            }
            throw err;
        }
    }

    CompletableFuture<Answer> sendAsync(Call c) {
        return attemptAsync(build(c), c, 0);
    }

    private CompletableFuture<Answer> attemptAsync(HttpRequest req, Call c, int attempt) {
        return http.sendAsync(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8))
                .handle((res, failure) -> {
                    if (failure != null) {
                        Throwable t = failure instanceof CompletionException && failure.getCause() != null
                                ? failure.getCause() : failure;
                        IOException io = t instanceof IOException ? (IOException) t : new IOException(t);
                        if (attempt < maxRetries && retryAfterFailure(c, io)) {
                            return later(req, c, attempt, backoff(attempt, null));
                        }
                        return CompletableFuture.<Answer>failedFuture(connectionError(io));
                    }
                    Answer a = new Answer(res.statusCode(), res.headers(), res.body());
                    if (a.status < 400) {
                        return CompletableFuture.completedFuture(a);
                    }
                    SovereignException err = error(a.status, a.headers, a.body);
                    if (attempt < maxRetries && retryAfterStatus(c, a.status, a.headers, err)) {
                        return later(req, c, attempt, backoff(attempt, a.headers));
                    }
                    return CompletableFuture.<Answer>failedFuture(err);
                })
                .thenCompose(f -> f);
    }

    private CompletableFuture<Answer> later(HttpRequest req, Call c, int attempt, Duration wait) {
        return CompletableFuture.supplyAsync(() -> null,
                CompletableFuture.delayedExecutor(wait.toMillis(), TimeUnit.MILLISECONDS))
                .thenCompose(x -> attemptAsync(req, c, attempt + 1));
    }

    /** A failure before an answer: retry when the request cannot have been sent, or may be resent. */
    static boolean retryAfterFailure(Call c, IOException e) {
        if (e instanceof SSLException || (e.getCause() instanceof SSLException)) {
            return false; // a handshake refused now is refused again
        }
        if (e instanceof ConnectException || e instanceof HttpConnectTimeoutException) {
            return true; // never reached the gateway
        }
        return c.retryable;
    }

    static boolean retryAfterStatus(Call c, int status, HttpHeaders h, SovereignException err) {
        if (h.firstValue("x-should-retry").map("false"::equalsIgnoreCase).orElse(false)) {
            return false;
        }
        if (err instanceof BudgetExceededException || "guardrail_violation".equals(err.type())) {
            return false;
        }
        if (status == 429) {
            return true; // refused before any effect
        }
        return (status == 502 || status == 503 || status == 504) && c.retryable;
    }

    /** Exponential backoff with jitter, or what the answer asks for; at most 60 s. */
    static Duration backoff(int attempt, HttpHeaders h) {
        if (h != null) {
            Duration asked = retryAfter(h);
            if (asked == null) {
                Instant reset = reset(h);
                if (reset != null) {
                    asked = Duration.between(Instant.now(), reset);
                    if (asked.isNegative()) {
                        asked = Duration.ZERO;
                    }
                }
            }
            if (asked != null) {
                return asked.compareTo(MAX_WAIT) > 0 ? MAX_WAIT : asked;
            }
        }
        double base = Math.min(0.5 * Math.pow(2, attempt), 8.0);
        double jittered = base * (0.75 + 0.25 * ThreadLocalRandom.current().nextDouble());
        return Duration.ofMillis((long) (jittered * 1000));
    }

    static Duration retryAfter(HttpHeaders h) {
        String v = h.firstValue("retry-after").orElse(null);
        if (v == null) {
            return null;
        }
        try {
            double s = Double.parseDouble(v.trim());
            return s < 0 ? null : Duration.ofMillis((long) (s * 1000));
        } catch (NumberFormatException e) {
            return null; // an HTTP date: the gateway sends seconds
        }
    }

    static Instant reset(HttpHeaders h) {
        String v = h.firstValue("x-ratelimit-reset").orElse(null);
        if (v == null) {
            return null;
        }
        try {
            return Instant.ofEpochSecond(Long.parseLong(v.trim()));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectionException("interrupted while waiting to retry", 0, "connection_error", null,
                    null, null, e);
        }
    }

    static SovereignException connectionError(IOException e) {
        String what = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        if (e instanceof HttpTimeoutException) {
            return new ConnectionTimeoutException("Request timed out: " + what, 0, "timeout", null, null, null, e);
        }
        return new ConnectionException("Connection error: " + what, 0, "connection_error", null, null, null, e);
    }

    /** SPEC.md's mapping ("Errors"; tests/vectors/errors.json). */
    static SovereignException error(int status, HttpHeaders headers, String body) {
        SovereignException.ErrorInfo e = new SovereignException.ErrorInfo();
        e.status = status;
        e.auditTraceId = headers.firstValue("x-audit-trace-id").orElse(null);
        e.message = "HTTP " + status;
        try {
            Object parsed = Json.parse(body);
            if (parsed instanceof Map && ((Map<?, ?>) parsed).get("error") instanceof Map) {
                Map<?, ?> err = (Map<?, ?>) ((Map<?, ?>) parsed).get("error");
                e.message = str(err.get("message"), e.message);
                e.type = str(err.get("type"), null);
                e.code = str(err.get("code"), null);
                e.param = str(err.get("param"), null);
            } else if (body != null && !body.isBlank()) {
                e.message = "HTTP " + status + ": " + body;
            }
        } catch (RuntimeException ex) {
            if (body != null && !body.isBlank()) {
                e.message = "HTTP " + status + ": " + (body.length() > 500 ? body.substring(0, 500) : body);
            }
        }
        // The status picks the kind; the gateway's type/code refine it within that status only.
        if (status == 451) {
            return new ResidencyException(e);
        }
        if (status == 429) {
            e.retryAfter = retryAfter(headers);
            e.reset = reset(headers);
            if ("insufficient_quota".equals(e.type) || "insufficient_quota".equals(e.code)) {
                return new BudgetExceededException(e);
            }
            return new RateLimitException(e);
        }
        switch (status) {
            case 400:
                return "guardrail_violation".equals(e.type) ? new GuardrailViolationException(e)
                        : new BadRequestException(e);
            case 401: return new AuthenticationException(e);
            case 403: return new PermissionDeniedException(e);
            case 404: return new NotFoundException(e);
            case 409: return new ConflictException(e);
            case 413: return new PayloadTooLargeException(e);
            case 422: return new UnprocessableEntityException(e);
            default:
                if (status == 503) {
                    return new ServiceUnavailableException(e);
                }
                if (status >= 500) {
                    return new ServerException(e);
                }
                return new SovereignException(e);
        }
    }

    private static String str(Object o, String dflt) {
        return o == null ? dflt : o.toString();
    }
}
