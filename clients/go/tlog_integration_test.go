package sovereign_test

// The transparency log against the real gateway (issue 48; the demo TestMain starts): requests,
// then the checkpoint, its key, an inclusion proof of a request's entry and a consistency proof
// between two checkpoints, all verified offline. A binary without the routes fails this test
// (it does not skip it).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sovereign "github.com/sovereign-gateway/sovereign-go"
)

func TestTlogGateway(t *testing.T) {
	d := need(t)
	ctx := ctxT(t)
	admin := d.client(t, d.admin)
	member := d.client(t, d.member)
	auditor := d.client(t, d.auditor)

	chat := func(text string) (requestID, sovereignID string) {
		t.Helper()
		maxTokens := 16
		resp, err := member.Chat.Create(ctx, sovereign.ChatCompletionRequest{Model: "auto-router", Messages: user(text), MaxTokens: &maxTokens})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Sovereignty.AuditTraceID == "" {
			t.Fatalf("no X-Audit-Trace-ID: %+v", resp.Sovereignty)
		}
		return resp.Sovereignty.AuditTraceID, resp.Sovereignty.SovereignID
	}
	// exportLine: the request's export line (without its newline) and its seq, once journaled.
	exportLine := func(requestID string) ([]byte, int64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			out, err := admin.Activity.Export(ctx, sovereign.ExportJSONL, &sovereign.ActivityQuery{RequestID: requestID})
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
			if len(out) > 0 && len(lines) == 1 {
				var e struct {
					Seq int64 `json:"seq"`
				}
				if err := json.Unmarshal(lines[0], &e); err != nil || e.Seq < 1 {
					t.Fatalf("export line %s: %v", lines[0], err)
				}
				return lines[0], e.Seq
			}
			if len(out) > 0 {
				t.Fatalf("the export of request %s is %d lines", requestID, len(lines))
			}
			if time.Now().After(deadline) {
				t.Fatalf("request %s is not in the journal after 20 s", requestID)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// checkpointOf: a verified checkpoint covering at least size entries.
	checkpointOf := func(vkey string, size int64) (string, *sovereign.TreeHead) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			note, err := admin.Activity.Checkpoint(ctx)
			if err != nil {
				t.Fatalf("checkpoint: %v", err)
			}
			head, err := sovereign.VerifyCheckpoint(note, vkey)
			if err != nil {
				t.Fatalf("checkpoint %q: %v", note, err)
			}
			if head.TreeSize >= size {
				return note, head
			}
			if time.Now().After(deadline) {
				t.Fatalf("the checkpoint stays at size %d, below %d, for 20 s", head.TreeSize, size)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	firstID, sovereignID := chat("Say hello in three words.")
	firstLine, firstSeq := exportLine(firstID)

	vkey, err := admin.Activity.CheckpointKey(ctx)
	if err != nil {
		t.Fatalf("checkpoint key: %v", err)
	}
	if !regexp.MustCompile(`^[^+\s]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$`).MatchString(vkey) {
		t.Fatalf("vkey %q", vkey)
	}
	name := vkey[:strings.Index(vkey, "+")]
	if name != "sovereign-gateway/journal/"+sovereignID {
		t.Errorf("the key's name %q is not the default origin of %s", name, sovereignID)
	}
	if k, err := auditor.Activity.CheckpointKey(ctx); err != nil || k != vkey {
		t.Fatalf("auditor's key %q %v", k, err)
	}

	oldNote, old := checkpointOf(vkey, firstSeq)
	if old.Origin != name || len(old.RootHash) != 32 {
		t.Fatalf("checkpoint %+v", old)
	}

	// More entries, then a newer checkpoint that covers them.
	var later []string
	for _, text := range []string{"One more, please.", "And another one.", "The last one."} {
		id, _ := chat(text)
		later = append(later, id)
	}
	_, lastSeq := exportLine(later[len(later)-1])
	newNote, now := checkpointOf(vkey, lastSeq)
	if now.TreeSize <= old.TreeSize {
		t.Fatalf("the log did not grow: %d then %d", old.TreeSize, now.TreeSize)
	}

	// Inclusion of the first request in the newer and in the older tree.
	for _, c := range []struct {
		note string
		head *sovereign.TreeHead
	}{{newNote, now}, {oldNote, old}} {
		proof, err := admin.Activity.InclusionProof(ctx, firstID, sovereign.AtTreeSize(c.head.TreeSize))
		if err != nil {
			t.Fatalf("inclusion proof at %d: %v", c.head.TreeSize, err)
		}
		if proof.LeafIndex != firstSeq-1 || proof.TreeSize != c.head.TreeSize {
			t.Fatalf("proof %+v for seq %d in %d", proof, firstSeq, c.head.TreeSize)
		}
		if _, err := sovereign.VerifyInclusion(firstLine, *proof, c.note, vkey); err != nil {
			t.Errorf("line %s at size %d: %v", firstLine, c.head.TreeSize, err)
		}
		if _, err := sovereign.VerifyInclusion(append(append([]byte{}, firstLine...), '\n'), *proof, c.note, vkey); err != nil {
			t.Errorf("the line with its newline at size %d: %v", c.head.TreeSize, err)
		}
		edited := regexp.MustCompile(`"latency_us":\d+`).ReplaceAllFunc(firstLine, func(m []byte) []byte {
			n, _ := strconv.ParseInt(string(m[len(`"latency_us":`):]), 10, 64)
			return []byte(fmt.Sprintf(`"latency_us":%d`, n+1))
		})
		if bytes.Equal(edited, firstLine) {
			t.Fatalf("could not edit %s", firstLine)
		}
		_, err = sovereign.VerifyInclusion(edited, *proof, c.note, vkey)
		var jerr *sovereign.JournalVerificationError
		if !errors.As(err, &jerr) || !strings.HasPrefix(jerr.Reason, "inclusion") {
			t.Errorf("an edited line: %v", err)
		}
	}

	// The default size is the latest checkpoint's (the log may have grown since the note).
	latest, err := admin.Activity.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	latestHead, err := sovereign.VerifyCheckpoint(latest, vkey)
	if err != nil {
		t.Fatal(err)
	}
	dflt, err := admin.Activity.InclusionProof(ctx, later[0])
	if err != nil {
		t.Fatal(err)
	}
	if dflt.TreeSize < latestHead.TreeSize {
		t.Fatalf("default size %d below the checkpoint's %d", dflt.TreeSize, latestHead.TreeSize)
	}
	if dflt.TreeSize != latestHead.TreeSize {
		if dflt, err = admin.Activity.InclusionProof(ctx, later[0], sovereign.AtTreeSize(latestHead.TreeSize)); err != nil {
			t.Fatal(err)
		}
	}
	laterLine, _ := exportLine(later[0])
	if _, err := sovereign.VerifyInclusion(laterLine, *dflt, latest, vkey); err != nil {
		t.Errorf("default-size proof: %v", err)
	}

	// Consistency: the older tree is a prefix of the newer one.
	cons, err := admin.Activity.ConsistencyProof(ctx, old.TreeSize, now.TreeSize)
	if err != nil {
		t.Fatalf("consistency proof: %v", err)
	}
	if cons.From != old.TreeSize || cons.To != now.TreeSize {
		t.Fatalf("consistency proof %+v", cons)
	}
	a, b, err := sovereign.VerifyConsistency(oldNote, newNote, *cons, vkey)
	if err != nil {
		t.Fatalf("consistency %d → %d: %v", old.TreeSize, now.TreeSize, err)
	}
	if !bytes.Equal(a.RootHash, old.RootHash) || !bytes.Equal(b.RootHash, now.RootHash) {
		t.Fatalf("%+v %+v", a, b)
	}
	if _, _, err := sovereign.VerifyConsistency(newNote, oldNote, *cons, vkey); !errors.Is(err, sovereign.ErrJournalVerification) {
		t.Errorf("swapped checkpoints: %v", err)
	}
	same, err := admin.Activity.ConsistencyProof(ctx, now.TreeSize, now.TreeSize)
	if err != nil || len(same.Hashes) != 0 {
		t.Fatalf("equal sizes: %+v %v", same, err)
	}
	if _, _, err := sovereign.VerifyConsistency(newNote, newNote, *same, vkey); err != nil {
		t.Errorf("equal sizes: %v", err)
	}

	// Errors: an unknown request, from = 0, a member.
	if _, err := admin.Activity.InclusionProof(ctx, "req-does-not-exist"); !errors.Is(err, sovereign.ErrNotFound) {
		t.Errorf("unknown request: %v", err)
	}
	if _, err := admin.Activity.ConsistencyProof(ctx, 0, 1); !errors.Is(err, sovereign.ErrBadRequest) {
		t.Errorf("from = 0: %v", err)
	}
	if _, err := member.Activity.Checkpoint(ctx); !errors.Is(err, sovereign.ErrPermissionDenied) {
		t.Errorf("a member's checkpoint: %v", err)
	}
	if _, err := member.Activity.CheckpointKey(context.Background()); !errors.Is(err, sovereign.ErrPermissionDenied) {
		t.Errorf("a member's key: %v", err)
	}
}
