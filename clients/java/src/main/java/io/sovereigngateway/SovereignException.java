package io.sovereigngateway;

/**
 * Every error this library raises (unchecked). An answer's error keeps the gateway's
 * {@code {"error": {"message", "type", "param", "code"}}} fields, the HTTP status and the
 * answer's {@code X-Audit-Trace-ID}; an error without an answer (connection, timeout) has
 * status 0.
 */
public class SovereignException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String type;
    private final String code;
    private final String param;
    private final String auditTraceId;

    public SovereignException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.type = type;
        this.code = code;
        this.param = param;
        this.auditTraceId = auditTraceId;
    }

    SovereignException(ErrorInfo e) {
        this(e.message, e.status, e.type, e.code, e.param, e.auditTraceId, e.cause);
    }

    /** The HTTP status, 0 when there was no answer. */
    public int status() {
        return status;
    }

    /** {@code error.type}, e.g. {@code invalid_request_error}. */
    public String type() {
        return type;
    }

    /** {@code error.code}, e.g. {@code sensitive_requires_local}; may be null. */
    public String code() {
        return code;
    }

    /** {@code error.param}; may be null. */
    public String param() {
        return param;
    }

    /** The answer's {@code X-Audit-Trace-ID}: the journal entry's {@code request_id}. */
    public String auditTraceId() {
        return auditTraceId;
    }

    /** The gateway's message (also {@link #getMessage()}). */
    public String message() {
        return getMessage();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "(status=" + status + ", type=" + type + ", code=" + code
                + ", param=" + param + ", auditTraceId=" + auditTraceId + "): " + getMessage();
    }

    /** What an error answer said; internal. */
    static final class ErrorInfo {
        String message;
        int status;
        String type;
        String code;
        String param;
        String auditTraceId;
        Throwable cause;
        java.time.Duration retryAfter;
        java.time.Instant reset;
    }
}
