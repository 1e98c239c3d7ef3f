package io.sovereigngateway;

/** 401: no valid credential (unknown, revoked or expired key). */
public class AuthenticationException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public AuthenticationException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    AuthenticationException(ErrorInfo e) {
        super(e);
    }
}
