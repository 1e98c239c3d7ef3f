package io.sovereigngateway;

/** No answer within the client's timeout. */
public class ConnectionTimeoutException extends ConnectionException {
    private static final long serialVersionUID = 1L;

    public ConnectionTimeoutException(String message, int status, String type, String code, String param,
            String auditTraceId, Throwable cause) {
        super(message, status, type, code, param, auditTraceId, cause);
    }

    ConnectionTimeoutException(ErrorInfo e) {
        super(e);
    }
}
