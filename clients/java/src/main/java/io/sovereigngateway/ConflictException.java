package io.sovereigngateway;

/** 409: the resource's state forbids it. */
public class ConflictException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public ConflictException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    ConflictException(ErrorInfo e) {
        super(e);
    }
}
