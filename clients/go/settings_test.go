package sovereign_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sovereign "github.com/sovereign-gateway/sovereign-go"
)

// TestOnlySovereignSettings: the client reads SOVEREIGN_API_KEY / SOVEREIGN_BASE_URL or its
// options, never OPENAI_*, and without a key it fails naming SOVEREIGN_API_KEY (issue 49, bug 1).
func TestOnlySovereignSettings(t *testing.T) {
	const openaiSecret = "sk-openai-must-never-leave"
	t.Setenv("OPENAI_API_KEY", openaiSecret)
	t.Setenv("OPENAI_BASE_URL", "http://openai.invalid/v1")
	t.Setenv("OPENAI_ORG_ID", "org-openai")
	t.Setenv("SOVEREIGN_API_KEY", "")
	t.Setenv("SOVEREIGN_BASE_URL", "")

	_, err := sovereign.NewClient("http://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "SOVEREIGN_API_KEY") {
		t.Fatalf("no key: %v", err)
	}
	if _, err := sovereign.NewClient("", sovereign.WithAPIKey("k")); err == nil || !strings.Contains(err.Error(), "SOVEREIGN_BASE_URL") {
		t.Fatalf("no address: %v", err)
	}

	var seen []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Clone())
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	defer srv.Close()
	t.Setenv("SOVEREIGN_API_KEY", "sk-sov-mine")
	t.Setenv("SOVEREIGN_BASE_URL", srv.URL) // NewClient("") falls back to it, like the other clients
	cl, err := sovereign.NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Models.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Get("Authorization") != "Bearer sk-sov-mine" {
		t.Fatalf("requests %v", seen)
	}
	for k, vs := range seen[0] {
		for _, v := range vs {
			if strings.Contains(v, openaiSecret) || strings.Contains(v, "org-openai") {
				t.Errorf("%s: %s sent", k, v)
			}
		}
	}
	if cl.BaseURL() != srv.URL {
		t.Errorf("base URL %s, want %s", cl.BaseURL(), srv.URL)
	}
}
