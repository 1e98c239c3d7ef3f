package io.sovereigngateway;

/** 403: the key's role may not do this. */
public class PermissionDeniedException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public PermissionDeniedException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    PermissionDeniedException(ErrorInfo e) {
        super(e);
    }
}
