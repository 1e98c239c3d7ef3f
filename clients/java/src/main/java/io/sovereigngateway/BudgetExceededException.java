package io.sovereigngateway;

/**
 * 429 {@code insufficient_quota}: a budget is spent. Waiting does not help: never retried. A
 * {@link RateLimitException}, as in every language (clients/SPEC.md, "Errors").
 */
public class BudgetExceededException extends RateLimitException {
    private static final long serialVersionUID = 1L;

    public BudgetExceededException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause, null, null);
    }

    BudgetExceededException(ErrorInfo e) {
        super(e);
    }
}
