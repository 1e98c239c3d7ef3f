package io.sovereigngateway;

/** No answer: the connection failed (refused, TLS handshake, reset). */
public class ConnectionException extends SovereignException {
    private static final long serialVersionUID = 1L;

    public ConnectionException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    ConnectionException(ErrorInfo e) {
        super(e);
    }
}
