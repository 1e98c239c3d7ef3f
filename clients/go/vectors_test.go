package sovereign_test

// The shared error vectors (../../tests/vectors/errors.json, clients/SPEC.md "Errors"): every
// answer there is an *APIError of exactly the kind it names, errors.Is-matching each ancestor,
// with the fields it lists.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	sovereign "github.com/sovereign-gateway/sovereign-go"
)

type errorVectors struct {
	Kinds   map[string]*string `json:"kinds"`
	Vectors []struct {
		Name    string            `json:"name"`
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		Body    json.RawMessage   `json:"body"`
		Kind    string            `json:"kind"`
		Parent  *string           `json:"parent"`
		Fields  map[string]any    `json:"fields"`
	} `json:"vectors"`
}

var kindNames = map[string]error{
	"StatusError":         sovereign.ErrAPI,
	"BadRequest":          sovereign.ErrBadRequest,
	"GuardrailViolation":  sovereign.ErrGuardrailViolation,
	"Authentication":      sovereign.ErrAuthentication,
	"PermissionDenied":    sovereign.ErrPermissionDenied,
	"NotFound":            sovereign.ErrNotFound,
	"Conflict":            sovereign.ErrConflict,
	"PayloadTooLarge":     sovereign.ErrPayloadTooLarge,
	"UnprocessableEntity": sovereign.ErrUnprocessable,
	"DataResidency":       sovereign.ErrResidency,
	"RateLimit":           sovereign.ErrRateLimit,
	"BudgetExceeded":      sovereign.ErrBudgetExceeded,
	"InternalServer":      sovereign.ErrServer,
	"ServiceUnavailable":  sovereign.ErrServiceUnavailable,
}

func loadErrorVectors(t *testing.T) errorVectors {
	t.Helper()
	raw, err := os.ReadFile("../../tests/vectors/errors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v errorVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestErrorVectorsKinds(t *testing.T) {
	v := loadErrorVectors(t)
	if len(v.Kinds) != len(kindNames) {
		t.Fatalf("the vectors name %d kinds, the table %d", len(v.Kinds), len(kindNames))
	}
	for kind, parent := range v.Kinds {
		k, ok := kindNames[kind]
		if !ok {
			t.Fatalf("kind %s has no sentinel", kind)
		}
		var want error
		if parent != nil {
			want = kindNames[*parent]
		}
		if got := sovereign.ParentKind(k); got != want {
			t.Errorf("%s: parent %v, want %v", kind, got, want)
		}
	}
}

func TestErrorVectors(t *testing.T) {
	v := loadErrorVectors(t)
	for i, vec := range v.Vectors {
		vec := vec
		t.Run(vec.Name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, val := range vec.Headers {
					w.Header().Set(k, val)
				}
				w.WriteHeader(vec.Status)
				var text string
				if json.Unmarshal(vec.Body, &text) == nil {
					_, _ = w.Write([]byte(text)) // a body that is not JSON
					return
				}
				_, _ = w.Write(vec.Body)
			}))
			defer srv.Close()
			cl, err := sovereign.NewClient(srv.URL, sovereign.WithAPIKey("k"), sovereign.WithMaxRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.Models.List(context.Background())
			var apiErr *sovereign.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("vector %d: %v is not an *APIError", i, err)
			}
			if apiErr.Kind != kindNames[vec.Kind] {
				t.Fatalf("kind %v, want %s", apiErr.Kind, vec.Kind)
			}
			if (vec.Parent == nil) != (v.Kinds[vec.Kind] == nil) || (vec.Parent != nil && *vec.Parent != *v.Kinds[vec.Kind]) {
				t.Fatalf("the vector's parent disagrees with the kinds table")
			}
			for p := v.Kinds[vec.Kind]; p != nil; p = v.Kinds[*p] {
				if !errors.Is(err, kindNames[*p]) {
					t.Errorf("not errors.Is %s", *p)
				}
			}
			got := map[string]any{
				"status":         float64(apiErr.StatusCode),
				"type":           nilIfEmpty(apiErr.Type),
				"code":           nilIfEmpty(apiErr.Code),
				"param":          nilIfEmpty(apiErr.Param),
				"message":        apiErr.Message,
				"audit_trace_id": nilIfEmpty(apiErr.AuditTraceID),
				"retry_after":    nil,
			}
			if apiErr.RetryAfter > 0 {
				got["retry_after"] = apiErr.RetryAfter.Seconds()
			}
			for name, want := range vec.Fields {
				if got[name] != want {
					t.Errorf("%s: %v (%T), want %v (%T)", name, got[name], got[name], want, want)
				}
			}
		})
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
