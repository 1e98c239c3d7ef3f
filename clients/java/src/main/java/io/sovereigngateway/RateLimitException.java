package io.sovereigngateway;

import java.time.Duration;
import java.time.Instant;

/**
 * 429: a rate limit; {@link #retryAfter()} says when to come back. A spent budget is the subkind
 * {@link BudgetExceededException}.
 */
public class RateLimitException extends SovereignException {
    private static final long serialVersionUID = 1L;

    private final Duration retryAfter;
    private final Instant reset;

    public RateLimitException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause, Duration retryAfter, Instant reset) {
        super(message, status, type, code, param, auditTraceId, cause);
        this.retryAfter = retryAfter;
        this.reset = reset;
    }

    RateLimitException(ErrorInfo e) {
        super(e);
        this.retryAfter = e.retryAfter;
        this.reset = e.reset;
    }

    /** From {@code Retry-After} (seconds); null when absent. */
    public Duration retryAfter() {
        return retryAfter;
    }

    /** From {@code X-RateLimit-Reset} (Unix seconds); null when absent. */
    public Instant reset() {
        return reset;
    }
}
