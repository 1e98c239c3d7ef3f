// Command newcomer is a newcomer's first program (scripts/newcomer-check go): the seven tasks
// of issue 49 against `sovereign demo`, with the module consumed as the README says (replace +
// require). Environment: SOVEREIGN_BASE_URL and SOVEREIGN_API_KEY (the member key: read by
// the library itself), NEWCOMER_ADMIN_KEY, NEWCOMER_AUDITOR_KEY, NEWCOMER_PDF,
// NEWCOMER_JOURNAL_PUBKEY.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	sovereign "github.com/sovereign-gateway/sovereign-go"
)

const (
	arabic   = "ما هي عاصمة المملكة العربية السعودية؟"
	question = "ما هي مدة الاحتفاظ بسجلات العملاء؟"
)

func check(err error, what string) {
	if err != nil {
		log.Fatalf("%s: %v", what, err)
	}
}

func must(ok bool, format string, args ...any) {
	if !ok {
		log.Fatalf(format, args...)
	}
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	member, err := sovereign.NewClient("") // SOVEREIGN_BASE_URL, SOVEREIGN_API_KEY
	check(err, "member client")
	admin, err := sovereign.NewClient("", sovereign.WithAPIKey(os.Getenv("NEWCOMER_ADMIN_KEY")))
	check(err, "admin client")
	auditor, err := sovereign.NewClient("", sovereign.WithAPIKey(os.Getenv("NEWCOMER_AUDITOR_KEY")))
	check(err, "auditor client")
	ask := []sovereign.ChatMessage{{Role: "user", Content: arabic}}

	// 1. An Arabic question to auto-router, and where it was served.
	reply, err := member.Chat.Create(ctx, sovereign.ChatCompletionRequest{Model: "auto-router", Messages: ask})
	check(err, "chat")
	s := reply.Sovereignty
	must(reply.Text() != "" && s.DataResidency == "sa-riyadh-1" && s.SovereignID == "demo-riyadh-1" &&
		s.RoutePolicy != "" && s.AuditTraceID != "", "chat: %+v", s)
	fmt.Printf("1 chat: %s in %s by %s\n", reply.Model, s.DataResidency, s.RoutePolicy)

	// 2. Streaming: the metadata before the first chunk, the text from the chunks.
	st, err := member.Chat.Stream(ctx, sovereign.ChatCompletionRequest{Model: "auto-router", Messages: ask})
	check(err, "stream")
	must(st.Sovereignty.DataResidency == "sa-riyadh-1", "stream metadata %+v", st.Sovereignty)
	var text strings.Builder
	for st.Next() {
		if c := st.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	check(st.Err(), "stream")
	st.Close()
	must(text.Len() > 0, "stream: no text")
	fmt.Printf("2 stream: %d characters\n", len([]rune(text.String())))

	// 3. Embeddings.
	emb, err := member.Embeddings.Create(ctx, sovereign.EmbeddingRequest{Model: "multilingual-e5-small", Input: []string{"مرحبا", "hello"}})
	check(err, "embeddings")
	must(len(emb.Data) == 2 && emb.Sovereignty.SovereignID == "demo-riyadh-1", "embeddings %+v", emb.Sovereignty)
	fmt.Printf("3 embeddings: %d x %d\n", len(emb.Data), len(emb.Data[0].Embedding))

	// 4. Upload a document and ask a question with citations.
	collection := fmt.Sprintf("newcomer-%d", os.Getpid())
	doc, err := member.Documents.UploadFile(ctx, os.Getenv("NEWCOMER_PDF"), collection)
	check(err, "upload")
	rag, err := member.RAG.Query(ctx, sovereign.RAGQuery{Query: question, Collection: collection, TopK: 2})
	check(err, "rag")
	must(len(rag.Citations) > 0 && rag.Citations[0].DocumentID == doc.ID, "rag: %+v", rag.Citations)
	page := 0
	if p := rag.Citations[0].Page; p != nil {
		page = *p
	}
	fmt.Printf("4 rag: cited %s page %d, confidence %.2f\n", rag.Citations[0].DocumentID, page, rag.Confidence)
	_, err = member.Documents.Delete(ctx, doc.ID)
	check(err, "delete")

	// 5. The journal: a page of entries, then the export verified offline against the pinned key.
	listed, err := auditor.Activity.Query(ctx, sovereign.ActivityQuery{Limit: 5})
	check(err, "activity")
	must(len(listed.Data) > 0, "no journal entries")
	_, err = auditor.Journal.CreateCheckpoint(ctx)
	check(err, "checkpoint")
	export, err := auditor.Activity.Export(ctx, sovereign.ExportJSONL, nil)
	check(err, "export")
	cps, err := auditor.Journal.ListCheckpoints(ctx)
	check(err, "checkpoints")
	pub, err := os.ReadFile(os.Getenv("NEWCOMER_JOURNAL_PUBKEY"))
	check(err, "public key")
	res, err := sovereign.VerifyJournalExport(bytes.NewReader(export), cps.Data, strings.TrimSpace(string(pub)))
	check(err, "verify")
	must(res.OK, "journal: %+v", res.Problem)
	fmt.Printf("5 journal: %d listed, %d verified offline, %d checkpoint(s) matched\n", len(listed.Data), res.Entries, res.CheckpointsChecked)

	// 6. Typed errors: a member may not read the journal; a card number is a guardrail refusal.
	_, err = member.Journal.ListCheckpoints(ctx)
	must(errors.Is(err, sovereign.ErrPermissionDenied), "a member read the journal: %v", err)
	_, err = member.Chat.Create(ctx, sovereign.ChatCompletionRequest{Model: "auto-router",
		Messages: []sovereign.ChatMessage{{Role: "user", Content: "card 4111 1111 1111 1111"}}})
	must(errors.Is(err, sovereign.ErrGuardrailViolation) && errors.Is(err, sovereign.ErrBadRequest), "card number: %v", err)
	fmt.Println("6 errors: ErrPermissionDenied (403), ErrGuardrailViolation (also ErrBadRequest)")

	// 7. Admin: create a key, use it, revoke it.
	key, err := admin.Admin.Keys.Create(ctx, sovereign.KeyCreate{TeamID: "demo", Role: "member", Name: collection})
	check(err, "create key")
	user, err := sovereign.NewClient("", sovereign.WithAPIKey(key.Key), sovereign.WithMaxRetries(0))
	check(err, "user client")
	_, err = user.Models.List(ctx)
	check(err, "the new key")
	_, err = admin.Admin.Keys.Revoke(ctx, key.ID)
	check(err, "revoke")
	_, err = user.Models.List(ctx)
	must(errors.Is(err, sovereign.ErrAuthentication), "a revoked key worked: %v", err)
	fmt.Printf("7 admin: key %s created, used, revoked\n", key.ID)
	fmt.Println("newcomer: 7 of 7 tasks done")
}
