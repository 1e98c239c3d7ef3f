package sovereign_test

// Tests against the real gateway (`sovereign demo`, started by TestMain): SPEC.md's "Tests".

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sovereign "github.com/sovereign-gateway/sovereign-go"
)

const arabicPrompt = "ما هي عاصمة المملكة العربية السعودية؟ أجب بجملة واحدة."

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func user(text string) []sovereign.ChatMessage {
	return []sovereign.ChatMessage{{Role: "user", Content: text}}
}

// TestStreamArabic: a streamed Arabic answer through auto-router, the metadata on the stream
// object before the first chunk.
func TestStreamArabic(t *testing.T) {
	d := need(t)
	c := d.client(t, d.member)
	st, err := c.Chat.Stream(ctxT(t), sovereign.ChatCompletionRequest{Model: "auto-router", Messages: user(arabicPrompt)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.Sovereignty
	if s.DataResidency != "sa-riyadh-1" || s.RoutePolicy == "" || s.SovereignID != "demo-riyadh-1" || s.AuditTraceID == "" {
		t.Fatalf("metadata before the first chunk: %+v", s)
	}
	var joined strings.Builder
	chunks := 0
	for st.Next() {
		chunks++
		for _, ch := range st.Current().Choices {
			joined.WriteString(ch.Delta.Content)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if chunks == 0 || strings.TrimSpace(joined.String()) == "" || joined.String() != st.Text() {
		t.Fatalf("%d chunks, text %q", chunks, joined.String())
	}
	t.Logf("streamed %d chunks via %s in %s: %.60q", chunks, s.RoutePolicy, s.DataResidency, joined.String())
}

// TestChatCreate: a whole answer with routing hints, the metadata on the response.
func TestChatCreate(t *testing.T) {
	d := need(t)
	c := d.client(t, d.member)
	maxTokens := 32
	resp, err := c.Chat.Create(ctxT(t), sovereign.ChatCompletionRequest{
		Model: "auto-router", Messages: user("Say hello in five words."), MaxTokens: &maxTokens,
		Routing: &sovereign.Routing{Profile: sovereign.RoutingCost}, RoutingPreference: sovereign.RoutingPerformance,
		User: "go-client-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() == "" || resp.Model == "" || resp.Sovereignty.SovereignID != "demo-riyadh-1" || resp.Sovereignty.DataResidency == "" || resp.Sovereignty.RoutePolicy == "" || resp.Sovereignty.AuditTraceID == "" {
		t.Fatalf("answer %+v", resp)
	}
	// A bad hint is a 400 naming the parameter.
	_, err = c.Chat.Create(ctxT(t), sovereign.ChatCompletionRequest{Model: "auto-router", Messages: user("hi"), RoutingPreference: "fastest"})
	var apiErr *sovereign.APIError
	if !errors.Is(err, sovereign.ErrBadRequest) || !errors.As(err, &apiErr) || apiErr.Param != "routing_preference" {
		t.Fatalf("bad routing_preference: %v", err)
	}
}

// TestResidency451: sensitive data to a cloud model is refused with 451.
func TestResidency451(t *testing.T) {
	d := need(t)
	c := d.client(t, d.member)
	for name, req := range map[string]sovereign.ChatCompletionRequest{
		"body":   {Model: "qwen2.5-coder-32b", Messages: user("Summarise this patient record."), Routing: &sovereign.Routing{Classification: "sensitive"}},
		"header": {Model: "qwen2.5-coder-32b", Messages: user("Summarise this patient record."), DataClassification: "sensitive"},
	} {
		_, err := c.Chat.Create(ctxT(t), req)
		var apiErr *sovereign.APIError
		if !errors.Is(err, sovereign.ErrResidency) || !errors.As(err, &apiErr) {
			t.Fatalf("%s: %v", name, err)
		}
		if apiErr.StatusCode != 451 || apiErr.Code != "sensitive_requires_local" || apiErr.AuditTraceID == "" {
			t.Fatalf("%s: %+v", name, apiErr)
		}
	}
}

// countingTransport counts requests.
type countingTransport struct {
	n    int32
	base http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	atomic.AddInt32(&c.n, 1)
	return c.base.RoundTrip(r)
}

// TestGuardrailBlock: a card number is refused (pii_detected), and not retried.
func TestGuardrailBlock(t *testing.T) {
	d := need(t)
	ct := &countingTransport{base: http.DefaultTransport}
	c := d.client(t, d.member, sovereign.WithHTTPClient(&http.Client{Transport: ct}), sovereign.WithMaxRetries(3))
	_, err := c.Chat.Create(ctxT(t), sovereign.ChatCompletionRequest{
		Model: "auto-router", Messages: user("Please charge my card 4111 1111 1111 1111 for the order."),
	})
	var apiErr *sovereign.APIError
	if !errors.Is(err, sovereign.ErrGuardrailViolation) || !errors.As(err, &apiErr) || apiErr.Code != "pii_detected" {
		t.Fatalf("card number: %v", err)
	}
	if !errors.Is(err, sovereign.ErrBadRequest) || !errors.Is(err, sovereign.ErrAPI) {
		t.Error("a guardrail violation is not also ErrBadRequest and ErrAPI (SPEC.md's hierarchy)")
	}
	if n := atomic.LoadInt32(&ct.n); n != 1 {
		t.Fatalf("guardrail refusal sent %d times", n)
	}
}

// TestRevokedKey: a key created by the admin works until revoked, then authentication fails.
func TestRevokedKey(t *testing.T) {
	d := need(t)
	ctx := ctxT(t)
	admin := d.client(t, d.admin)
	team, err := admin.Admin.Teams.Create(ctx, sovereign.TeamCreate{Name: "go-revoke-" + fmt.Sprint(time.Now().UnixNano()), Plan: "professional"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Admin.Teams.Delete(context.Background(), team.ID) })
	key, err := admin.Admin.Keys.Create(ctx, sovereign.KeyCreate{TeamID: team.ID, Role: "member", Name: "go-revoke"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key.Key, "sk-") || key.TeamID != team.ID || key.Role != "member" {
		t.Fatalf("created key %+v", key)
	}
	c := d.client(t, key.Key, sovereign.WithMaxRetries(0))
	if _, err := c.Models.List(ctx); err != nil {
		t.Fatalf("new key: %v", err)
	}
	if _, err := c.Chat.Create(ctx, sovereign.ChatCompletionRequest{Model: "llama-3.2-3b-instruct", Messages: user("hello")}); err != nil {
		t.Fatalf("new key chat: %v", err)
	}
	revoked, err := admin.Admin.Keys.Revoke(ctx, key.ID)
	if err != nil || revoked.State != "revoked" || revoked.Key != "" {
		t.Fatalf("revoke: %v %+v", err, revoked)
	}
	_, err = c.Models.List(ctx)
	var apiErr *sovereign.APIError
	if !errors.Is(err, sovereign.ErrAuthentication) || !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("revoked key: %v", err)
	}
}

// TestModelsAndEmbeddings: the catalogue's sovereign fields; an embedding with metadata.
func TestModelsAndEmbeddings(t *testing.T) {
	d := need(t)
	ctx := ctxT(t)
	c := d.client(t, d.member)
	list, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]sovereign.Model{}
	for _, m := range list.Data {
		byID[m.ID] = m
	}
	jais, ok := byID["jais-30b-chat"]
	if !ok || jais.Family == "" || jais.RegionName() != "sa-riyadh-1" || !contains(jais.Languages, "ar") || jais.Local == nil || !*jais.Local {
		t.Fatalf("jais-30b-chat: %+v", jais)
	}
	if _, ok := byID["auto-router"]; !ok {
		t.Error("auto-router not listed")
	}
	qwen, err := c.Models.Get(ctx, "qwen2.5-coder-32b")
	if err != nil || qwen.RegionName() != "eu-frankfurt-1" {
		t.Fatalf("qwen: %v %+v", err, qwen)
	}
	if _, err := c.Models.Get(ctx, "no-such-model"); !errors.Is(err, sovereign.ErrNotFound) {
		t.Fatalf("unknown model: %v", err)
	}
	emb, err := c.Embeddings.Create(ctx, sovereign.EmbeddingRequest{Model: "multilingual-e5-small", Input: []string{"مرحبا", "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Data) != 2 || len(emb.Data[0].Embedding) == 0 || emb.Sovereignty.SovereignID != "demo-riyadh-1" || emb.Sovereignty.AuditTraceID == "" {
		t.Fatalf("embeddings: %d vectors, %+v", len(emb.Data), emb.Sovereignty)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestJournal: the jsonl export verified offline (intact, edited, checkpoint matched, foreign
// key); the pager over all pages; csv; the server's own verification.
func TestJournal(t *testing.T) {
	d := need(t)
	ctx := ctxT(t)
	admin := d.client(t, d.admin)
	member := d.client(t, d.member)
	// Some entries to read.
	for i := 0; i < 3; i++ {
		if _, err := member.Models.List(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// A signed checkpoint, before the export so the export holds its seq. (The route comes
	// with a later build of the gateway: the checkpoint cases skip on its 404, and only then.)
	var checkpoints []sovereign.Checkpoint
	cp, err := admin.Journal.CreateCheckpoint(ctx)
	noCheckpoints := ""
	if errors.Is(err, sovereign.ErrNotFound) {
		noCheckpoints = "POST /v1/admin/journal/checkpoints answers 404 in this build of the gateway: " + err.Error()
	} else if err != nil {
		t.Fatalf("create checkpoint: %v", err)
	} else {
		checkpoints = []sovereign.Checkpoint{*cp}
	}

	export, err := admin.Activity.Export(ctx, sovereign.ExportJSONL, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(export, []byte("\n")), []byte("\n"))
	if len(lines) < 4 {
		t.Fatalf("export of %d lines", len(lines))
	}
	res, err := sovereign.VerifyJournalExport(bytes.NewReader(export), checkpoints, "", sovereign.VerifySovereignID("demo-riyadh-1"))
	if err != nil || !res.OK {
		t.Fatalf("intact export: %v %+v %+v", err, res, res.Problem)
	}
	if res.Entries != len(lines) || res.FirstSeq != 1 || res.Gaps != 0 {
		t.Fatalf("result %+v", res)
	}

	// One entry edited: its status changed.
	k := len(lines) / 2
	edited := make([][]byte, len(lines))
	copy(edited, lines)
	var entry map[string]any
	if err := json.Unmarshal(lines[k], &entry); err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf(`"status":%q`, entry["status"])
	repl := `"status":"blocked"`
	if entry["status"] == "blocked" {
		repl = `"status":"success"`
	}
	edited[k] = bytes.Replace(lines[k], []byte(old), []byte(repl), 1)
	if bytes.Equal(edited[k], lines[k]) {
		t.Fatalf("could not edit line %d: %s", k+1, lines[k])
	}
	bad := sovereign.VerifyJournalLines(edited, nil, "")
	if bad.OK || bad.Problem == nil || !strings.HasPrefix(bad.Problem.Reason, "edited") || bad.Problem.Line != k+1 {
		t.Fatalf("edited line %d: %+v %+v", k+1, bad, bad.Problem)
	}

	t.Run("checkpoints", func(t *testing.T) {
		if noCheckpoints != "" {
			t.Skip(noCheckpoints)
		}
		if cp.Seq < 1 || !strings.HasPrefix(cp.HeadHash, "sha256:") || !strings.HasPrefix(cp.PublicKey, "ed25519:") || cp.SovereignID != "demo-riyadh-1" {
			t.Fatalf("checkpoint %+v", cp)
		}
		list, err := admin.Journal.ListCheckpoints(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, x := range list.Data {
			found = found || (x.Seq == cp.Seq && x.HeadHash == cp.HeadHash)
		}
		if !found {
			t.Fatalf("the new checkpoint is not listed: %+v", list.Data)
		}
		if res.CheckpointsChecked < 1 {
			t.Fatalf("checkpoint seq %d not matched in an export to seq %d", cp.Seq, res.HeadSeq)
		}
		// Pinned to the operator's key (its .pub file when found, else the checkpoint's own).
		pinned := cp.PublicKey
		if b, err := os.ReadFile(filepath.Join(d.dataDir, "journal-signing.key.pub")); err == nil {
			pinned = string(b)
		} else {
			t.Logf("no journal-signing.key.pub in the data dir (%v): pinning the checkpoint's own key", err)
		}
		if ok := sovereign.VerifyJournalLines(lines, checkpoints, pinned); !ok.OK || ok.CheckpointsChecked < 1 {
			t.Fatalf("pinned to the operator's key: %+v %+v", ok, ok.Problem)
		}
		other, _, _ := ed25519.GenerateKey(nil)
		foreign := sovereign.VerifyJournalLines(lines, checkpoints, "ed25519:"+hex.EncodeToString(other))
		if foreign.OK || !strings.HasPrefix(foreign.Problem.Reason, "untrusted key") {
			t.Fatalf("pinned to another key: %+v %+v", foreign, foreign.Problem)
		}
		// A truncated export (the checkpoint's entry and after removed).
		if cp.Seq >= 2 {
			trunc := sovereign.VerifyJournalLines(lines[:cp.Seq-1], checkpoints, "")
			if trunc.OK || !strings.HasPrefix(trunc.Problem.Reason, "truncated") {
				t.Fatalf("truncated: %+v %+v", trunc, trunc.Problem)
			}
		}
		// The listed checkpoints (all of this chain) verify against the export too.
		all := sovereign.VerifyJournalLines(lines, list.Data, pinned, sovereign.VerifySovereignID("demo-riyadh-1"))
		if !all.OK || all.CheckpointsChecked < 1 {
			t.Fatalf("listed checkpoints: %+v %+v", all, all.Problem)
		}
	})

	// The pager walks every page in seq order.
	pager := admin.Activity.QueryAll(ctx, sovereign.ActivityQuery{Limit: 2})
	var last int64
	n := 0
	for pager.Next() {
		e := pager.Current()
		if e.Seq <= last || e.JournalHash == "" || e.Replica != "demo-riyadh-1" {
			t.Fatalf("entry %+v after seq %d", e, last)
		}
		last = e.Seq
		n++
		if n > 100000 {
			t.Fatal("runaway pager")
		}
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	if n < len(lines) || pager.Pages < 2 {
		t.Fatalf("pager: %d entries in %d pages, export had %d", n, pager.Pages, len(lines))
	}
	page, err := admin.Activity.Query(ctx, sovereign.ActivityQuery{Action: "models.list", Limit: 1})
	if err != nil || len(page.Data) != 1 || page.Data[0].Action != "models.list" || page.NextCursor == nil {
		t.Fatalf("filtered page: %v %+v", err, page)
	}
	csv, err := admin.Activity.Export(ctx, sovereign.ExportCSV, &sovereign.ActivityQuery{Status: "success"})
	if err != nil || !bytes.HasPrefix(csv, []byte("seq,timestamp,")) {
		t.Fatalf("csv: %v %.80q", err, csv)
	}
	// A filtered jsonl export has gaps, and still verifies.
	filtered, err := admin.Activity.Export(ctx, sovereign.ExportJSONL, &sovereign.ActivityQuery{Action: "models.list"})
	if err != nil {
		t.Fatal(err)
	}
	fres, _ := sovereign.VerifyJournalExport(bytes.NewReader(filtered), checkpoints, "")
	if !fres.OK || fres.Entries < 3 {
		t.Fatalf("filtered export: %+v %+v", fres, fres.Problem)
	}
	// A member may not read the journal.
	if _, err := member.Activity.Query(ctx, sovereign.ActivityQuery{}); !errors.Is(err, sovereign.ErrPermissionDenied) {
		t.Fatalf("member reading the journal: %v", err)
	}
	report, err := admin.Journal.Verify(ctx)
	if err != nil || !report.OK || len(report.Chains) == 0 || report.Chains[0].Entries < 1 {
		t.Fatalf("server verification: %v %+v", err, report)
	}
}

// TestDocuments: upload the Arabic PDF, list, get, query with citations, delete.
func TestDocuments(t *testing.T) {
	d := need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := d.client(t, d.member, sovereign.WithTimeout(110*time.Second))
	fixture := "../../host/documents/tests/fixtures/ar_harfbuzz.pdf"
	collection := fmt.Sprintf("go-%d", time.Now().UnixNano())
	doc, err := c.Documents.UploadFile(ctx, fixture, collection)
	var apiErr *sovereign.APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == 503 && apiErr.Code == "retrieval_unavailable" {
		if _, serr := os.Stat("../../models"); serr != nil {
			t.Skipf("the retrieval model is not installed (../../models missing): %v", err)
		}
		t.Fatalf("retrieval unavailable although ../../models exists: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.ID, "doc_") || doc.Kind != "pdf" || doc.Collection != collection || doc.Chunks < 1 || doc.Pages == nil || !doc.Created || doc.Status != "completed" {
		t.Fatalf("uploaded %+v", doc)
	}
	list, err := c.Documents.List(ctx, &sovereign.DocumentListParams{Collection: collection, Limit: 10})
	if err != nil || len(list.Data) != 1 || list.Data[0].ID != doc.ID {
		t.Fatalf("list: %v %+v", err, list)
	}
	got, err := c.Documents.Get(ctx, doc.ID)
	if err != nil || got.SHA256 != doc.SHA256 || got.Filename != "ar_harfbuzz.pdf" {
		t.Fatalf("get: %v %+v", err, got)
	}
	raw, _ := os.ReadFile(fixture)
	if got.SHA256 != sha256hex(raw) {
		t.Fatalf("sha256 %s", got.SHA256)
	}
	result, err := c.RAG.Query(ctx, sovereign.RAGQuery{Query: "ما هي مدة الاحتفاظ بسجلات العملاء؟", Collection: collection, TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Citations) == 0 || result.Confidence <= 0 || result.Confidence > 1 {
		t.Fatalf("rag: confidence %v, %d citations", result.Confidence, len(result.Citations))
	}
	top := result.Citations[0]
	if top.DocumentID != doc.ID || top.Page == nil || *top.Page < 1 || top.Text == "" || !strings.HasPrefix(top.ChunkID, "chk_") || top.Confidence < 0 || top.Confidence > 1 {
		t.Fatalf("citation %+v", top)
	}
	del, err := c.Documents.Delete(ctx, doc.ID)
	if err != nil || !del.Deleted || del.ID != doc.ID {
		t.Fatalf("delete: %v %+v", err, del)
	}
	if _, err := c.Documents.Get(ctx, doc.ID); !errors.Is(err, sovereign.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}

const testRouting = `name: go-client-test
routes:
  - name: arabic
    condition: "language == 'ar'"
    model: allam-7b-instruct
  - name: small-prompts
    condition: "prompt_tokens < 500"
    model: llama-3.2-3b-instruct
default: qwen2.5-coder-32b
`

// TestAdmin: teams, keys, usage, policies, guardrail; an auditor may not create a key.
func TestAdmin(t *testing.T) {
	d := need(t)
	ctx := ctxT(t)
	admin := d.client(t, d.admin)

	// Teams.
	name := fmt.Sprintf("go-admin-%d", time.Now().UnixNano())
	budget := 25.0
	team, err := admin.Admin.Teams.Create(ctx, sovereign.TeamCreate{Name: name, Plan: "development", Budget: &budget, AllowedRegions: []string{"sa-riyadh-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if team.ID == "" || team.Name != name || team.Plan != "development" || team.Budget == nil || *team.Budget != 25 || team.Spend == nil {
		t.Fatalf("created team %+v", team)
	}
	teams, err := admin.Admin.Teams.List(ctx)
	if err != nil || !hasTeam(teams.Data, team.ID) || !hasTeam(teams.Data, "demo") {
		t.Fatalf("list teams: %v", err)
	}
	if got, err := admin.Admin.Teams.Get(ctx, team.ID); err != nil || got.Name != name {
		t.Fatalf("get team: %v %+v", err, got)
	}
	updated, err := admin.Admin.Teams.Update(ctx, team.ID, sovereign.TeamUpdate{"name": name + "-x", "budget": nil})
	if err != nil || updated.Name != name+"-x" || updated.Budget != nil {
		t.Fatalf("update team: %v %+v", err, updated)
	}

	// Keys.
	key, err := admin.Admin.Keys.Create(ctx, sovereign.KeyCreate{TeamID: team.ID, Role: "member", Name: "go-admin"})
	if err != nil || key.Key == "" || key.State != "active" {
		t.Fatalf("create key: %v %+v", err, key)
	}
	keys, err := admin.Admin.Keys.List(ctx, team.ID)
	if err != nil || len(keys.Data) != 1 || keys.Data[0].ID != key.ID || keys.Data[0].Key != "" {
		t.Fatalf("list keys: %v %+v", err, keys)
	}
	if got, err := admin.Admin.Keys.Get(ctx, key.ID); err != nil || got.Prefix == "" || got.Key != "" {
		t.Fatalf("get key: %v %+v", err, got)
	}
	grace := int64(0)
	rotated, err := admin.Admin.Keys.Rotate(ctx, key.ID, &grace)
	if err != nil || rotated.ID == key.ID || rotated.Key == "" || rotated.Replaces != key.ID {
		t.Fatalf("rotate: %v %+v", err, rotated)
	}
	if _, err := d.client(t, rotated.Key).Models.List(ctx); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	revoked, err := admin.Admin.Keys.Revoke(ctx, rotated.ID)
	if err != nil || revoked.State != "revoked" {
		t.Fatalf("revoke: %v %+v", err, revoked)
	}
	if _, err := admin.Admin.Keys.Get(ctx, "key_does_not_exist"); !errors.Is(err, sovereign.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}

	// An auditor may not create a key.
	auditor := d.client(t, d.auditor)
	_, err = auditor.Admin.Keys.Create(ctx, sovereign.KeyCreate{TeamID: "demo", Role: "member"})
	if !errors.Is(err, sovereign.ErrPermissionDenied) {
		t.Fatalf("auditor creating a key: %v", err)
	}

	// Usage (the admin's, and the auditor's own team).
	usage, err := admin.Admin.Usage.Get(ctx, &sovereign.UsageParams{TeamID: "demo"})
	if err != nil || usage.Object != "list" || usage.Currency == "" {
		t.Fatalf("usage: %v %+v", err, usage)
	}
	if _, err := auditor.Admin.Usage.Get(ctx, nil); err != nil {
		t.Fatalf("auditor usage: %v", err)
	}

	if _, err := admin.Admin.Teams.Delete(ctx, team.ID); err != nil {
		t.Fatalf("delete team: %v", err)
	}
	if _, err := admin.Admin.Teams.Get(ctx, team.ID); !errors.Is(err, sovereign.ErrNotFound) {
		t.Fatalf("deleted team: %v", err)
	}

	// Policies: upload a routing document (no component), activate it, roll back.
	before, err := admin.Admin.Policies.List(ctx)
	if err != nil || before.Active == nil || len(before.Data) == 0 {
		t.Fatalf("policies: %v %+v", err, before)
	}
	previous := *before.Active
	version, err := admin.Admin.Policies.Upload(ctx, sovereign.PolicyUpload{Document: testRouting})
	if err != nil {
		t.Fatal(err)
	}
	if version.ID == previous || !version.Active || version.DocumentSHA256 == nil {
		t.Fatalf("uploaded %+v", version)
	}
	if _, err := admin.Admin.Policies.Activate(ctx, previous); err == nil {
		// and back to the uploaded one, then to the earlier again (rollback both ways)
	} else {
		t.Fatalf("re-activate %s: %v", previous, err)
	}
	if v, err := admin.Admin.Policies.Activate(ctx, version.ID); err != nil || !v.Active {
		t.Fatalf("activate %s: %v", version.ID, err)
	}
	back, err := admin.Admin.Policies.Activate(ctx, previous)
	if err != nil || !back.Active || back.ID != previous {
		t.Fatalf("roll back: %v %+v", err, back)
	}
	after, err := admin.Admin.Policies.List(ctx)
	if err != nil || after.Active == nil || *after.Active != previous || len(after.Data) < len(before.Data)+1 {
		t.Fatalf("policies after: %v %+v", err, after)
	}
	if _, err := admin.Admin.Policies.Upload(ctx, sovereign.PolicyUpload{Document: "routes: [unclosed"}); !errors.Is(err, sovereign.ErrBadRequest) {
		t.Fatalf("bad document: %v", err)
	}

	// Guardrail: read, set the same settings again.
	g, err := admin.Admin.Guardrail.Get(ctx)
	if err != nil || g.ComponentSHA256 == "" || len(g.Settings) == 0 {
		t.Fatalf("guardrail: %v %+v", err, g)
	}
	set, err := admin.Admin.Guardrail.Set(ctx, sovereign.GuardrailUpdate{Settings: json.RawMessage(g.Settings)})
	if err != nil || set.ComponentSHA256 != g.ComponentSHA256 {
		t.Fatalf("set guardrail: %v %+v", err, set)
	}
	if _, err := admin.Admin.Guardrail.Set(ctx, sovereign.GuardrailUpdate{}); !errors.Is(err, sovereign.ErrBadRequest) {
		t.Fatalf("empty guardrail update: %v", err)
	}
	// The guardrail still blocks cards.
	_, err = d.client(t, d.member).Chat.Create(ctx, sovereign.ChatCompletionRequest{Model: "auto-router", Messages: user("card 4111 1111 1111 1111")})
	if !errors.Is(err, sovereign.ErrGuardrailViolation) {
		t.Fatalf("after set: %v", err)
	}
	if _, err := d.client(t, d.member).Admin.Guardrail.Get(ctx); !errors.Is(err, sovereign.ErrPermissionDenied) {
		t.Fatalf("member reading the guardrail: %v", err)
	}
}

func hasTeam(ts []sovereign.Team, id string) bool {
	for _, t := range ts {
		if t.ID == id {
			return true
		}
	}
	return false
}

// TestTLS: with the demo's CA and the member's client certificate, no API key is needed;
// without the CA the connection fails.
func TestTLS(t *testing.T) {
	d := needDemo(t, tlsDemo)
	ctx := ctxT(t)
	if !strings.HasPrefix(d.url, "https://") {
		t.Fatalf("the --tls demo listens on %s", d.url)
	}
	tlsDir := filepath.Join(d.dataDir, "tls")
	c, err := sovereign.NewClient(d.url,
		sovereign.WithAPIKey(""),
		sovereign.WithCABundle(d.tlsCA),
		sovereign.WithClientCertificate(filepath.Join(tlsDir, "client-member.pem"), filepath.Join(tlsDir, "client-member.key")),
		sovereign.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat.Create(ctx, sovereign.ChatCompletionRequest{Model: "auto-router", Messages: user(arabicPrompt)})
	if err != nil {
		t.Fatalf("mTLS chat: %v", err)
	}
	if resp.Text() == "" || resp.Sovereignty.DataResidency != "sa-riyadh-1" {
		t.Fatalf("mTLS answer %+v", resp)
	}
	// CA only, no certificate and no key: the client refuses to start.
	t.Setenv("SOVEREIGN_API_KEY", "")
	if _, err := sovereign.NewClient(d.url, sovereign.WithCABundle(d.tlsCA)); err == nil || !strings.Contains(err.Error(), "SOVEREIGN_API_KEY") {
		t.Fatalf("no credentials: %v", err)
	}
	// CA and a wrong key: authentication fails (the TLS handshake works).
	caOnly, _ := sovereign.NewClient(d.url, sovereign.WithAPIKey("sk-sov-wrong"), sovereign.WithCABundle(d.tlsCA), sovereign.WithMaxRetries(0))
	if _, err := caOnly.Models.List(ctx); !errors.Is(err, sovereign.ErrAuthentication) {
		t.Fatalf("a wrong key: %v", err)
	}
	// Without the CA: a TLS error, reported as a connection error.
	noCA, _ := sovereign.NewClient(d.url, sovereign.WithAPIKey(d.member), sovereign.WithMaxRetries(0),
		sovereign.WithClientCertificate(filepath.Join(tlsDir, "client-member.pem"), filepath.Join(tlsDir, "client-member.key")))
	_, err = noCA.Models.List(ctx)
	var connErr *sovereign.ConnectionError
	if !errors.Is(err, sovereign.ErrConnection) || !errors.As(err, &connErr) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v", err)
	}
	if _, err := sovereign.NewClient(d.url, sovereign.WithAPIKey("k"), sovereign.WithCABundle(filepath.Join(tlsDir, "missing.pem"))); err == nil {
		t.Fatal("a missing CA bundle was accepted")
	}
}
