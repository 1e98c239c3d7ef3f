package io.sovereigngateway;

/** 400: the request is invalid. */
public class BadRequestException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public BadRequestException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    BadRequestException(ErrorInfo e) {
        super(e);
    }
}
