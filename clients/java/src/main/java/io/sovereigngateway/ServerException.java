package io.sovereigngateway;

/** 5xx: the gateway or an upstream failed. */
public class ServerException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public ServerException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    ServerException(ErrorInfo e) {
        super(e);
    }
}
