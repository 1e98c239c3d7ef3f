package io.sovereigngateway;

/** 451 {@code sovereignty_error}: the data may not go where the route would send it (e.g. code {@code sensitive_requires_local}). */
public class ResidencyException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public ResidencyException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    ResidencyException(ErrorInfo e) {
        super(e);
    }
}
