package io.sovereigngateway;

/** 413: the body is over a limit. */
public class PayloadTooLargeException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public PayloadTooLargeException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    PayloadTooLargeException(ErrorInfo e) {
        super(e);
    }
}
