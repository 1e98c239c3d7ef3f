package io.sovereigngateway;

/** 400 {@code guardrail_violation}: the guardrail refused the content (e.g. code {@code pii_detected}). Never retried. */
public class GuardrailViolationException extends BadRequestException {
    private static final long serialVersionUID = 1L;

    public GuardrailViolationException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    GuardrailViolationException(ErrorInfo e) {
        super(e);
    }
}
