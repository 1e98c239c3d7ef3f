package sovereign_test

// Tests that need no gateway: JCS, offline journal verification, webhooks, error mapping and
// retries (against httptest servers).

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sovereign "github.com/sovereign-gateway/sovereign-go"
)

func TestCanonicalJSON(t *testing.T) {
	cases := []struct {
		in   string
		want string
	}{
		{`{"b":1,"a":"x"}`, `{"a":"x","b":1}`},
		{`{"a":"<>&\u2028\u2029"}`, "{\"a\":\"<>&\u2028\u2029\"}"},
		{`{"a":"\u0001\b\t\n\f\r\u001f\"\\/"}`, `{"a":"\u0001\b\t\n\f\r\u001f\"\\/"}`},
		{`{"a":"سياسة","z":null,"m":-42,"n":9007199254740991}`, `{"a":"سياسة","m":-42,"n":9007199254740991,"z":null}`},
		{`{"\u00e9":1,"e":2,"\ud83d\ude00":3,"\uff61":4}`, "{\"e\":2,\"\u00e9\":1,\"\U0001F600\":3,\"\uff61\":4}"},
		{` { "a" : [ 1 , "b" , true , null ] } `, `{"a":[1,"b",true,null]}`},
		{`{"z":[{"tokens_out":20,"model":"m","tokens_in":10,"spend_micros":42}],"a":null}`, `{"a":null,"z":[{"model":"m","spend_micros":42,"tokens_in":10,"tokens_out":20}]}`},
	}
	for _, c := range cases {
		dec := json.NewDecoder(strings.NewReader(c.in))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		got, err := sovereign.CanonicalJSON(v)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("CanonicalJSON(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	dec := json.NewDecoder(strings.NewReader(`{"a":1.5}`))
	dec.UseNumber()
	var v any
	_ = dec.Decode(&v)
	if _, err := sovereign.CanonicalJSON(v); err == nil {
		t.Error("a float was accepted")
	}
}

// chain builds a journal export of n entries, as the gateway writes it.
func chain(t *testing.T, n int) [][]byte {
	t.Helper()
	prev := sovereign.GenesisHash
	var lines [][]byte
	for i := 1; i <= n; i++ {
		e := map[string]any{
			"seq": json.Number(fmt.Sprint(i)), "prev_hash": prev,
			"timestamp":  fmt.Sprintf("2026-11-22T21:31:%02d.123Z", i),
			"request_id": fmt.Sprintf("req-%d", i), "actor_id": "alice <a&b>\u2028", "team_id": "demo",
			"key_id": "key_1", "action": "chat.completions", "model": "jais-30b-chat",
			"prompt_hash": nil, "routing_policy": "sovereign-default", "residency_boundary": "sa-riyadh-1",
			"status": "success", "prompt_tokens": json.Number("12"), "completion_tokens": nil,
			"latency_us": json.Number("1234"),
		}
		h, err := sovereign.EntryHash(e)
		if err != nil {
			t.Fatal(err)
		}
		e["journal_hash"] = h
		line, err := sovereign.CanonicalJSON(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
		prev = h
	}
	return lines
}

func hashOf(t *testing.T, line []byte) string {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	return m["journal_hash"].(string)
}

func signCheckpoint(t *testing.T, priv ed25519.PrivateKey, seq int, head string) sovereign.Checkpoint {
	t.Helper()
	obj := map[string]any{
		"count": json.Number(fmt.Sprint(seq)), "head_hash": head, "seq": json.Number(fmt.Sprint(seq)),
		"public_key":   "ed25519:" + hex.EncodeToString(priv.Public().(ed25519.PublicKey)),
		"sovereign_id": "eu-1", "timestamp": "2026-11-22T21:32:00.000Z",
	}
	msg, err := sovereign.CanonicalJSON(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj["signature"] = "ed25519:" + hex.EncodeToString(ed25519.Sign(priv, msg))
	raw, _ := sovereign.CanonicalJSON(obj)
	var cp sovereign.Checkpoint
	if err := json.Unmarshal(raw, &cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

func TestVerifyJournalOffline(t *testing.T) {
	lines := chain(t, 6)
	export := append(bytes.Join(lines, []byte("\n")), '\n')
	pub, priv, _ := ed25519.GenerateKey(nil)
	pinned := "ed25519:" + hex.EncodeToString(pub) + "\n"
	cp := signCheckpoint(t, priv, 4, hashOf(t, lines[3]))

	res, err := sovereign.VerifyJournalExport(bytes.NewReader(export), []sovereign.Checkpoint{cp}, pinned)
	if err != nil || !res.OK {
		t.Fatalf("intact chain: %+v %v %+v", res, err, res.Problem)
	}
	if res.Entries != 6 || res.FirstSeq != 1 || res.HeadSeq != 6 || res.HeadHash != hashOf(t, lines[5]) || res.CheckpointsChecked != 1 || res.Gaps != 0 {
		t.Fatalf("result %+v", res)
	}

	check := func(name string, lines [][]byte, cps []sovereign.Checkpoint, key string, reason string, line int) {
		t.Helper()
		res := sovereign.VerifyJournalLines(lines, cps, key)
		if res.OK || res.Problem == nil || !strings.HasPrefix(res.Problem.Reason, reason) || res.Problem.Line != line {
			t.Errorf("%s: got %+v %+v, want %q at line %d", name, res, res.Problem, reason, line)
		}
	}
	edited := clone(lines)
	edited[2] = bytes.Replace(edited[2], []byte(`"status":"success"`), []byte(`"status":"error"`), 1)
	check("edited", edited, nil, "", "edited", 3)

	reordered := clone(lines)
	reordered[2], reordered[3] = reordered[3], reordered[2]
	check("reordered", reordered, nil, "", "reordered", 4)

	check("malformed", append(clone(lines[:2]), []byte(`{"seq":3}`)), nil, "", "malformed", 3)
	check("not json", append(clone(lines[:2]), []byte(`garbage`)), nil, "", "malformed", 3)

	// A rewritten tail: entries 4.. recomputed from another entry 4; the checkpoint exposes it.
	other := chain(t, 6)
	rewritten := rechain(t, append(clone(lines[:3]), other[3:]...), "model", "qwen2.5-coder-32b")
	check("rewritten", rewritten, []sovereign.Checkpoint{cp}, "", "rewritten", 4)

	check("truncated", lines[:3], []sovereign.Checkpoint{cp}, "", "truncated", 0)

	_, otherPriv, _ := ed25519.GenerateKey(nil)
	foreign := signCheckpoint(t, otherPriv, 4, hashOf(t, lines[3]))
	check("untrusted", lines, []sovereign.Checkpoint{foreign}, pinned, "untrusted key", 0)
	if res := sovereign.VerifyJournalLines(lines, []sovereign.Checkpoint{foreign}, ""); !res.OK {
		t.Errorf("a self-signed checkpoint without a pinned key: %+v", res.Problem)
	}

	forged := cp
	forged.Raw = bytes.Replace(cp.Raw, []byte(`"count":4`), []byte(`"count":5`), 1)
	check("bad signature", lines, []sovereign.Checkpoint{forged}, "", "bad signature", 0)

	// A filtered export: gaps allowed and counted; broken links only between consecutive seqs.
	filtered := [][]byte{lines[0], lines[2], lines[3], lines[5]}
	res = sovereign.VerifyJournalLines(filtered, []sovereign.Checkpoint{cp}, pinned)
	if !res.OK || res.Gaps != 2 || res.CheckpointsChecked != 1 {
		t.Errorf("filtered: %+v %+v", res, res.Problem)
	}
	// A checkpoint of another chain is ignored when the sovereign id is given.
	res = sovereign.VerifyJournalLines(lines[:3], []sovereign.Checkpoint{cp}, "", sovereign.VerifySovereignID("other"))
	if !res.OK {
		t.Errorf("other chain's checkpoint used: %+v", res.Problem)
	}

	// Broken link: a consecutive entry whose prev_hash (and so hash) was recomputed.
	broken := clone(lines)
	broken[3] = rehash(t, broken[3], "prev_hash", "sha256:"+strings.Repeat("1", 64))
	check("broken link", broken, nil, "", "broken link", 4)
	badGenesis := [][]byte{rehash(t, lines[0], "prev_hash", "sha256:"+strings.Repeat("2", 64))}
	check("genesis", badGenesis, nil, "", "broken link", 1)

	// Checkpoints from a checkpoints-<id>.jsonl file.
	var file bytes.Buffer
	file.Write(cp.Raw)
	file.WriteString("\n\n")
	cps, err := sovereign.ParseCheckpoints(&file)
	if err != nil || len(cps) != 1 || cps[0].Seq != 4 || cps[0].SovereignID != "eu-1" {
		t.Fatalf("ParseCheckpoints: %v %+v", err, cps)
	}
}

func clone(lines [][]byte) [][]byte {
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = append([]byte(nil), l...)
	}
	return out
}

// rehash sets field k of the entry and recomputes its journal_hash.
func rehash(t *testing.T, line []byte, k, v string) []byte {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	m[k] = v
	h, _ := sovereign.EntryHash(m)
	m["journal_hash"] = h
	out, _ := sovereign.CanonicalJSON(m)
	return out
}

// rechain recomputes every link and hash after changing k in the first entry after the
// common prefix (the one at index 3).
func rechain(t *testing.T, lines [][]byte, k, v string) [][]byte {
	out := clone(lines)
	prev := hashOf(t, out[2])
	for i := 3; i < len(out); i++ {
		dec := json.NewDecoder(bytes.NewReader(out[i]))
		dec.UseNumber()
		var m map[string]any
		_ = dec.Decode(&m)
		if i == 3 {
			m[k] = v
		}
		m["prev_hash"] = prev
		h, _ := sovereign.EntryHash(m)
		m["journal_hash"] = h
		out[i], _ = sovereign.CanonicalJSON(m)
		prev = h
	}
	return out
}

// chargedExport is two entries as the gateway writes them, the second with charges
// (docs/JOURNAL.md); hashes computed with Python's rfc8785 package, independently of
// CanonicalJSON.
var chargedExport = []string{
	`{"action":"models.list","actor_id":"key_1","auth":"key","completion_tokens":null,` +
		`"journal_hash":"sha256:41a6eebe7a154b8b4ffa2d665dc5b2745a86dcf93387d2e36cb03e995ba98a13",` +
		`"key_id":"key_1","latency_us":812,"model":null,` +
		`"prev_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000",` +
		`"prompt_hash":null,"prompt_tokens":null,"request_id":"req-1","residency_boundary":null,` +
		`"routing_policy":null,"seq":1,"status":"success","team_id":"team_1",` +
		`"timestamp":"2026-11-22T21:31:47.123Z"}`,
	`{"action":"chat.completions","actor_id":"key_1","auth":"key",` +
		`"charges":[{"model":"local-llama","spend_micros":42,"tokens_in":10,"tokens_out":20},` +
		`{"model":"jais-30b-chat","spend_micros":0,"tokens_in":7,"tokens_out":0}],` +
		`"completion_tokens":20,` +
		`"journal_hash":"sha256:cb74dc42eb24f73d6cc8371e550a97d33d6d3ff3b68ffb8cf889e3f6ffdacbee",` +
		`"key_id":"key_1","latency_us":1234,"model":"local-llama",` +
		`"prev_hash":"sha256:41a6eebe7a154b8b4ffa2d665dc5b2745a86dcf93387d2e36cb03e995ba98a13",` +
		`"prompt_hash":"sha256:abababababababababababababababababababababababababababababababab",` +
		`"prompt_tokens":10,"request_id":"req-2","residency_boundary":"eu-west",` +
		`"routing_policy":"sovereign-default","seq":2,"status":"success","team_id":"team_1",` +
		`"timestamp":"2026-11-22T21:31:48.456Z"}`,
}

func TestVerifyJournalCharges(t *testing.T) {
	lines := [][]byte{[]byte(chargedExport[0]), []byte(chargedExport[1])}
	res := sovereign.VerifyJournalLines(lines, nil, "")
	if !res.OK || res.Entries != 2 || res.HeadHash != "sha256:cb74dc42eb24f73d6cc8371e550a97d33d6d3ff3b68ffb8cf889e3f6ffdacbee" {
		t.Fatalf("an entry with charges: %+v %+v", res, res.Problem)
	}
	// Re-encoded, not trusted as written: the charges' keys in another order still verify.
	shuffled := strings.Replace(chargedExport[1],
		`{"model":"local-llama","spend_micros":42,"tokens_in":10,"tokens_out":20}`,
		`{"tokens_out":20,"tokens_in":10,"spend_micros":42,"model":"local-llama"}`, 1)
	if res := sovereign.VerifyJournalLines([][]byte{lines[0], []byte(shuffled)}, nil, ""); !res.OK {
		t.Errorf("the charges' keys in another order: %+v", res.Problem)
	}
	edited := strings.Replace(chargedExport[1], `"spend_micros":42`, `"spend_micros":41`, 1)
	res = sovereign.VerifyJournalLines([][]byte{lines[0], []byte(edited)}, nil, "")
	if res.OK || res.Problem == nil || !strings.HasPrefix(res.Problem.Reason, "edited") || res.Problem.Line != 2 {
		t.Errorf("an edited charge: %+v %+v", res, res.Problem)
	}

	// The typed view: present when carried, omitted when not.
	var charged, plain sovereign.JournalEntry
	if err := json.Unmarshal(lines[1], &charged); err != nil {
		t.Fatal(err)
	}
	want := []sovereign.JournalCharge{
		{Model: "local-llama", SpendMicros: 42, TokensIn: 10, TokensOut: 20},
		{Model: "jais-30b-chat", TokensIn: 7},
	}
	if fmt.Sprint(charged.Charges) != fmt.Sprint(want) {
		t.Errorf("charges %+v, want %+v", charged.Charges, want)
	}
	if err := json.Unmarshal(lines[0], &plain); err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(plain); plain.Charges != nil || bytes.Contains(out, []byte("charges")) {
		t.Errorf("an entry without charges: %+v, %s", plain.Charges, out)
	}
}

func TestVerifyWebhook(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"event":"webhook.test","details":{"webhook_id":"wh_1"}}`)
	now := time.Unix(1_800_000_000, 0)
	sig, err := sovereign.SignWebhook(secret, "evt_1", now.Unix(), body)
	if err != nil {
		t.Fatal(err)
	}
	// The signature computed independently of SignWebhook.
	if !strings.HasPrefix(sig, "v1,") {
		t.Fatalf("signature %q", sig)
	}
	h := http.Header{}
	h.Set("webhook-id", "evt_1")
	h.Set("webhook-timestamp", fmt.Sprint(now.Unix()))
	h.Set("webhook-signature", "v1,bm90IHRoZSBzaWduYXR1cmU= "+sig)
	if err := sovereign.VerifyWebhook(secret, h, body, 0, now); err != nil {
		t.Fatalf("valid webhook refused: %v", err)
	}
	// Lower-case keys in a literal map, and a rotation's two signatures.
	lit := http.Header{"webhook-id": {"evt_1"}, "webhook-timestamp": {fmt.Sprint(now.Unix())}, "webhook-signature": {sig}}
	if err := sovereign.VerifyWebhook(secret, lit, body, 0, now.Add(299*time.Second)); err != nil {
		t.Fatalf("valid webhook (literal header) refused: %v", err)
	}
	bad := func(name string, h http.Header, body []byte, now time.Time) {
		t.Helper()
		err := sovereign.VerifyWebhook(secret, h, body, 5*time.Minute, now)
		var werr *sovereign.WebhookVerificationError
		if !errors.Is(err, sovereign.ErrWebhookVerification) || !errors.As(err, &werr) {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad("tampered body", h, []byte(`{"event":"webhook.test","details":{"webhook_id":"wh_2"}}`), now)
	bad("old timestamp", h, body, now.Add(301*time.Second))
	bad("future timestamp", h, body, now.Add(-301*time.Second))
	other := h.Clone()
	other.Set("webhook-id", "evt_2")
	bad("other id", other, body, now)
	missing := h.Clone()
	missing.Del("webhook-signature")
	bad("no signature", missing, body, now)
	if err := sovereign.VerifyWebhook("whsec_"+strings.Repeat("A", 12), h, body, 0, now); err == nil {
		t.Error("wrong secret accepted")
	}
}

// TestWebhookSignatureVector: the Standard Webhooks reference vector.
func TestWebhookSignatureVector(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	sig, _ := sovereign.SignWebhook(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
	if sig != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("signature %s", sig)
	}
}

func TestErrorMapping(t *testing.T) {
	cases := []struct {
		status int
		typ    string
		code   string
		kind   error
	}{
		{400, "guardrail_violation", "pii_detected", sovereign.ErrGuardrailViolation},
		{451, "sovereignty_error", "sensitive_requires_local", sovereign.ErrResidency},
		{429, "insufficient_quota", "budget_exceeded", sovereign.ErrBudgetExceeded},
		{429, "rate_limit_error", "insufficient_quota", sovereign.ErrBudgetExceeded},
		{429, "rate_limit_error", "rate_limit_exceeded", sovereign.ErrRateLimit},
		{400, "invalid_request_error", "", sovereign.ErrBadRequest},
		{401, "authentication_error", "revoked_api_key", sovereign.ErrAuthentication},
		{403, "permission_error", "", sovereign.ErrPermissionDenied},
		{404, "invalid_request_error", "not_found", sovereign.ErrNotFound},
		{409, "invalid_request_error", "", sovereign.ErrConflict},
		{413, "invalid_request_error", "", sovereign.ErrPayloadTooLarge},
		{422, "invalid_request_error", "", sovereign.ErrUnprocessable},
		{500, "server_error", "", sovereign.ErrServer},
		{503, "server_error", "", sovereign.ErrServiceUnavailable},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Audit-Trace-ID", "req-42")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(c.status)
			fmt.Fprintf(w, `{"error":{"message":"m","type":%q,"param":"p","code":%q}}`, c.typ, c.code)
		}))
		cl, _ := sovereign.NewClient(srv.URL, sovereign.WithAPIKey("k"), sovereign.WithMaxRetries(0))
		_, err := cl.Models.List(context.Background())
		srv.Close()
		var apiErr *sovereign.APIError
		if !errors.As(err, &apiErr) || !errors.Is(err, c.kind) || apiErr.Kind != c.kind {
			t.Errorf("%d %s: %v is not %v", c.status, c.typ, err, c.kind)
			continue
		}
		if apiErr.StatusCode != c.status || apiErr.Type != c.typ || apiErr.Code != c.code || apiErr.Param != "p" || apiErr.Message != "m" || apiErr.AuditTraceID != "req-42" {
			t.Errorf("%d: fields %+v", c.status, apiErr)
		}
		if c.status == 503 && !errors.Is(err, sovereign.ErrServer) {
			t.Errorf("503 is not ErrServer")
		}
	}
}

// flaky answers with the given statuses in turn, then 200; it counts the requests.
func flaky(t *testing.T, headers http.Header, statuses ...int) (*httptest.Server, *int32) {
	var n int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(atomic.AddInt32(&n, 1)) - 1
		if i < len(statuses) {
			for k, vs := range headers {
				w.Header()[k] = vs
			}
			w.WriteHeader(statuses[i])
			typ := "server_error"
			if statuses[i] == 429 {
				typ = "rate_limit_error"
			}
			fmt.Fprintf(w, `{"error":{"message":"no","type":%q,"param":null,"code":null}}`, typ)
			return
		}
		w.Header().Set("X-Sovereign-ID", "s1")
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/admin/teams" {
			w.WriteHeader(201)
			fmt.Fprint(w, `{"id":"team_1","object":"team","name":"x"}`)
			return
		}
		fmt.Fprint(w, `{"object":"list","data":[]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	srv, n := flaky(t, http.Header{"Retry-After": {"0"}}, 503, 502)
	cl, _ := sovereign.NewClient(srv.URL+"/v1/", sovereign.WithAPIKey("k"))
	if _, err := cl.Models.List(ctx); err != nil || atomic.LoadInt32(n) != 3 {
		t.Fatalf("503, 502 then 200: %v after %d requests", err, *n)
	}

	srv, n = flaky(t, http.Header{"Retry-After": {"0"}}, 503, 503, 503)
	cl, _ = sovereign.NewClient(srv.URL, sovereign.WithAPIKey("k"), sovereign.WithMaxRetries(1))
	if _, err := cl.Models.List(ctx); !errors.Is(err, sovereign.ErrServiceUnavailable) || atomic.LoadInt32(n) != 2 {
		t.Fatalf("max retries 1: %v after %d requests", err, *n)
	}

	// Retry-After honoured: one second.
	srv, n = flaky(t, http.Header{"Retry-After": {"1"}}, 429)
	cl, _ = sovereign.NewClient(srv.URL, sovereign.WithAPIKey("k"))
	start := time.Now()
	if _, err := cl.Models.List(ctx); err != nil || atomic.LoadInt32(n) != 2 {
		t.Fatalf("429 then 200: %v after %d", err, *n)
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 5*time.Second {
		t.Fatalf("Retry-After 1 waited %s", d)
	}
	// X-RateLimit-Reset honoured (Unix seconds, about a second ahead).
	srv, n = flaky(t, http.Header{"X-Ratelimit-Reset": {fmt.Sprint(time.Now().Add(1500 * time.Millisecond).Unix())}}, 429)
	cl, _ = sovereign.NewClient(srv.URL, sovereign.WithAPIKey("k"))
	if _, err := cl.Models.List(ctx); err != nil || atomic.LoadInt32(n) != 2 {
		t.Fatalf("429 (reset) then 200: %v after %d", err, *n)
	}

	// Non-idempotent calls are not retried after a 503, but are after a 429.
	srv, n = flaky(t, http.Header{"Retry-After": {"0"}}, 503)
	cl, _ = sovereign.NewClient(srv.URL, sovereign.WithAPIKey("k"))
	if _, err := cl.Admin.Teams.Create(ctx, sovereign.TeamCreate{Name: "x"}); !errors.Is(err, sovereign.ErrServer) || atomic.LoadInt32(n) != 1 {
		t.Fatalf("create team after 503: %v after %d", err, *n)
	}
	srv, n = flaky(t, http.Header{"Retry-After": {"0"}}, 429)
	cl, _ = sovereign.NewClient(srv.URL, sovereign.WithAPIKey("k"))
	if team, err := cl.Admin.Teams.Create(ctx, sovereign.TeamCreate{Name: "x"}); err != nil || team.ID != "team_1" || atomic.LoadInt32(n) != 2 {
		t.Fatalf("create team after 429: %v after %d", err, *n)
	}

	// Budget refusals are never retried.
	var budget int32
	bsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&budget, 1)
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(429)
		fmt.Fprint(w, `{"error":{"message":"spent","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
	}))
	defer bsrv.Close()
	cl, _ = sovereign.NewClient(bsrv.URL, sovereign.WithAPIKey("k"))
	if _, err := cl.Models.List(ctx); !errors.Is(err, sovereign.ErrBudgetExceeded) || atomic.LoadInt32(&budget) != 1 {
		t.Fatalf("budget: %v after %d", err, budget)
	}

	// A context cancelled during the backoff stops the retries.
	srv, n = flaky(t, http.Header{"Retry-After": {"30"}}, 429, 429)
	cl, _ = sovereign.NewClient(srv.URL, sovereign.WithAPIKey("k"))
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := cl.Models.List(cctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled: %v after %s", err, time.Since(start))
	}

	// Connection errors: retried, then a ConnectionError.
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	cl, _ = sovereign.NewClient(url, sovereign.WithAPIKey("k"), sovereign.WithMaxRetries(1))
	if _, err := cl.Models.List(ctx); !errors.Is(err, sovereign.ErrConnection) {
		t.Fatalf("dead server: %v", err)
	}

	// A timeout.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	cl, _ = sovereign.NewClient(slow.URL, sovereign.WithAPIKey("k"), sovereign.WithMaxRetries(0), sovereign.WithTimeout(100*time.Millisecond))
	if _, err := cl.Models.List(ctx); !errors.Is(err, sovereign.ErrTimeout) || !errors.Is(err, sovereign.ErrConnection) {
		t.Fatalf("timeout: %v", err)
	}
}

// TestStreamParsing: SSE framing, comments, multi-line data, metadata before the first chunk.
func TestStreamParsing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body["stream"] != true || r.Header.Get("X-Data-Classification") != "internal" {
			w.WriteHeader(400)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Sovereign-ID", "demo-riyadh-1")
		w.Header().Set("X-Data-Residency", "sa-riyadh-1")
		w.Header().Set("X-Route-Policy", "sovereign-default")
		w.Header().Set("X-Audit-Trace-ID", "req-1")
		fmt.Fprint(w, ": keep-alive\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"مرحبا\"}}]}\r\n\r\n")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":\ndata: [{\"index\":0,\"delta\":{\"content\":\" بك\"},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	cl, _ := sovereign.NewClient(srv.URL, sovereign.WithAPIKey("k"))
	st, err := cl.Chat.Stream(context.Background(), sovereign.ChatCompletionRequest{
		Model: "auto-router", Messages: []sovereign.ChatMessage{{Role: "user", Content: "x"}}, DataClassification: "internal",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Sovereignty != (sovereign.Sovereignty{SovereignID: "demo-riyadh-1", AuditTraceID: "req-1", RoutePolicy: "sovereign-default", DataResidency: "sa-riyadh-1"}) {
		t.Fatalf("metadata %+v", st.Sovereignty)
	}
	n := 0
	for st.Next() {
		n++
	}
	if st.Err() != nil || n != 2 || st.Text() != "مرحبا بك" {
		t.Fatalf("chunks %d, text %q, err %v", n, st.Text(), st.Err())
	}

	// A stream cut before [DONE] is an error; an error event is an APIError.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
		if r.Header.Get("X-Actor-ID") == "" {
			fmt.Fprint(w, "data: {\"error\":{\"message\":\"upstream\",\"type\":\"server_error\",\"param\":null,\"code\":\"upstream_error\"}}\n\n")
		}
	}))
	defer cut.Close()
	cl, _ = sovereign.NewClient(cut.URL, sovereign.WithAPIKey("k"))
	st, err = cl.Chat.Stream(context.Background(), sovereign.ChatCompletionRequest{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for st.Next() {
	}
	var apiErr *sovereign.APIError
	if !errors.As(st.Err(), &apiErr) || apiErr.Code != "upstream_error" {
		t.Fatalf("error event: %v", st.Err())
	}
	st, err = cl.Chat.Stream(context.Background(), sovereign.ChatCompletionRequest{Model: "m", ActorID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for st.Next() {
	}
	if !errors.Is(st.Err(), sovereign.ErrConnection) || st.Text() != "a" {
		t.Fatalf("cut stream: %v %q", st.Err(), st.Text())
	}
}

// sha256hex is used by the integration tests.
func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
