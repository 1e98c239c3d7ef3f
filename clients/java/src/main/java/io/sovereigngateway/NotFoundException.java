package io.sovereigngateway;

/** 404: no such resource (or not visible to this team). */
public class NotFoundException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public NotFoundException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    NotFoundException(ErrorInfo e) {
        super(e);
    }
}
