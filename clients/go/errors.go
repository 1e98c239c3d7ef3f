package sovereign

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Error kinds, for errors.Is (clients/SPEC.md, "Errors"). An *APIError has exactly one kind
// (its Kind field) and matches that kind's ancestors too: ErrGuardrailViolation is also
// ErrBadRequest, ErrBudgetExceeded also ErrRateLimit, ErrServiceUnavailable also ErrServer, and
// every *APIError is ErrAPI. A *ConnectionError is ErrConnection, and ErrTimeout too when it
// timed out.
var (
	ErrBadRequest          = errors.New("sovereign: bad request")            // 400
	ErrAuthentication      = errors.New("sovereign: authentication failed")  // 401
	ErrPermissionDenied    = errors.New("sovereign: permission denied")      // 403
	ErrNotFound            = errors.New("sovereign: not found")              // 404
	ErrConflict            = errors.New("sovereign: conflict")               // 409
	ErrPayloadTooLarge     = errors.New("sovereign: payload too large")      // 413
	ErrUnprocessable       = errors.New("sovereign: unprocessable entity")   // 422
	ErrRateLimit           = errors.New("sovereign: rate limited")           // 429
	ErrBudgetExceeded      = errors.New("sovereign: budget exceeded")        // 429 insufficient_quota
	ErrResidency           = errors.New("sovereign: data residency refusal") // 451
	ErrGuardrailViolation  = errors.New("sovereign: guardrail violation")    // 400 guardrail_violation
	ErrServer              = errors.New("sovereign: server error")           // >= 500
	ErrServiceUnavailable  = errors.New("sovereign: service unavailable")    // 503 (also ErrServer)
	ErrAPI                 = errors.New("sovereign: API error")              // every error answer; alone, a status with no kind above
	ErrConnection          = errors.New("sovereign: connection error")       // no answer
	ErrTimeout             = errors.New("sovereign: timeout")                // no answer in time
	ErrWebhookVerification = errors.New("sovereign: webhook verification failed")
)

// APIError is an error answer of the gateway (`{"error": {message, type, param, code}}`).
type APIError struct {
	StatusCode   int
	Type         string
	Code         string
	Param        string
	Message      string
	AuditTraceID string // X-Audit-Trace-ID of the answer
	SovereignID  string // X-Sovereign-ID of the answer
	// RetryAfter is the Retry-After header's wait (0 when absent).
	RetryAfter time.Duration
	// Reset is X-RateLimit-Reset (zero when absent).
	Reset time.Time
	// Kind is the sentinel this error matches with errors.Is.
	Kind   error
	Header http.Header
	Body   []byte

	noRetry bool
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sovereign: %d", e.StatusCode)
	if e.Type != "" {
		fmt.Fprintf(&b, " %s", e.Type)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.AuditTraceID != "" {
		fmt.Fprintf(&b, " [audit trace %s]", e.AuditTraceID)
	}
	return b.String()
}

// parentKind is the hierarchy of SPEC.md: each kind's parent (ErrAPI is the root).
var parentKind = map[error]error{
	ErrBadRequest:         ErrAPI,
	ErrGuardrailViolation: ErrBadRequest,
	ErrAuthentication:     ErrAPI,
	ErrPermissionDenied:   ErrAPI,
	ErrNotFound:           ErrAPI,
	ErrConflict:           ErrAPI,
	ErrPayloadTooLarge:    ErrAPI,
	ErrUnprocessable:      ErrAPI,
	ErrResidency:          ErrAPI,
	ErrRateLimit:          ErrAPI,
	ErrBudgetExceeded:     ErrRateLimit,
	ErrServer:             ErrAPI,
	ErrServiceUnavailable: ErrServer,
}

// ParentKind is the kind's parent in SPEC.md's hierarchy (nil for ErrAPI and unknown errors).
func ParentKind(kind error) error { return parentKind[kind] }

// Is matches the error's kind and each of its ancestors (SPEC.md's hierarchy).
func (e *APIError) Is(target error) bool {
	for k := e.Kind; k != nil; k = parentKind[k] {
		if target == k {
			return true
		}
	}
	return false
}

// Unwrap gives the kind.
func (e *APIError) Unwrap() error { return e.Kind }

// newAPIError maps an error answer to its kind, in SPEC.md's order.
func newAPIError(status int, h http.Header, body []byte) *APIError {
	e := &APIError{
		StatusCode:   status,
		Header:       h,
		Body:         body,
		AuditTraceID: h.Get("X-Audit-Trace-ID"),
		SovereignID:  h.Get("X-Sovereign-ID"),
		RetryAfter:   parseRetryAfter(h),
		Reset:        parseReset(h),
		noRetry:      strings.EqualFold(h.Get("X-Should-Retry"), "false"),
	}
	var shape struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    any     `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &shape) == nil && shape.Error != nil {
		e.Message = shape.Error.Message
		e.Type = shape.Error.Type
		if shape.Error.Param != nil {
			e.Param = *shape.Error.Param
		}
		switch c := shape.Error.Code.(type) {
		case string:
			e.Code = c
		case float64:
			e.Code = fmt.Sprint(c)
		}
	} else {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 500 {
			e.Message = e.Message[:500]
		}
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
	}
	e.Kind = kindOf(status, e.Type, e.Code)
	return e
}

// kindOf: the status picks the kind, then the gateway's type/code refine it within that status
// only (SPEC.md, "Errors"; tests/vectors/errors.json).
func kindOf(status int, typ, code string) error {
	switch {
	case status == 400 && typ == "guardrail_violation":
		return ErrGuardrailViolation
	case status == 451:
		return ErrResidency
	case status == 429 && (typ == "insufficient_quota" || code == "insufficient_quota"):
		return ErrBudgetExceeded
	case status == 429:
		return ErrRateLimit
	case status == 400:
		return ErrBadRequest
	case status == 401:
		return ErrAuthentication
	case status == 403:
		return ErrPermissionDenied
	case status == 404:
		return ErrNotFound
	case status == 409:
		return ErrConflict
	case status == 413:
		return ErrPayloadTooLarge
	case status == 422:
		return ErrUnprocessable
	case status == 503:
		return ErrServiceUnavailable
	case status >= 500:
		return ErrServer
	}
	return ErrAPI
}

// ConnectionError: no answer from the gateway (refused connection, TLS failure, timeout, a
// connection dropped before the answer). Err is the cause (e.g. an x509 error).
type ConnectionError struct {
	Err     error
	timeout bool
	sent    bool
}

func (e *ConnectionError) Error() string {
	if e.timeout {
		return "sovereign: timeout: " + e.Err.Error()
	}
	return "sovereign: connection error: " + e.Err.Error()
}

// Timeout reports whether the attempt timed out.
func (e *ConnectionError) Timeout() bool { return e.timeout }

// Is matches ErrConnection, and ErrTimeout for a timeout.
func (e *ConnectionError) Is(target error) bool {
	return target == ErrConnection || (e.timeout && target == ErrTimeout)
}

// Unwrap gives the cause.
func (e *ConnectionError) Unwrap() error { return e.Err }

// WebhookVerificationError: a webhook request whose signature or timestamp did not verify.
type WebhookVerificationError struct{ Reason string }

func (e *WebhookVerificationError) Error() string {
	return "sovereign: webhook verification failed: " + e.Reason
}

// Is matches ErrWebhookVerification.
func (e *WebhookVerificationError) Is(target error) bool { return target == ErrWebhookVerification }
