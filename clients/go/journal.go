package sovereign

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// ---------------------------------------------------------------- activity logs

// ActivityService: POST /v1/activity/logs (queryActivityLogs): pages (Query, QueryAll) and
// exports (Export).
type ActivityService struct{ c *Client }

// ActivityQuery filters the journal. Times are ISO 8601 with a zone.
type ActivityQuery struct {
	From      string `json:"from,omitempty"`
	To        string `json:"to,omitempty"`
	ActorID   string `json:"actor_id,omitempty"`
	TeamID    string `json:"team_id,omitempty"`
	Model     string `json:"model,omitempty"`
	Status    string `json:"status,omitempty"` // success, blocked, rejected, error
	Action    string `json:"action,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Replica   string `json:"replica,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	Cursor    string `json:"cursor,omitempty"`
}

type activityBody struct {
	ActivityQuery
	Format string `json:"format"`
}

// JournalCharge is what a request was charged (an entry's charges): the model whose prices
// applied, the spend in integer micro-units of the configured currency, tokens in and out.
type JournalCharge struct {
	Model       string `json:"model"`
	SpendMicros int64  `json:"spend_micros"`
	TokensIn    int64  `json:"tokens_in"`
	TokensOut   int64  `json:"tokens_out"`
}

// JournalEntry is one activity-journal entry.
type JournalEntry struct {
	Seq               int64   `json:"seq"`
	PrevHash          string  `json:"prev_hash"`
	Timestamp         string  `json:"timestamp"`
	RequestID         string  `json:"request_id"`
	ActorID           string  `json:"actor_id"`
	TeamID            string  `json:"team_id"`
	KeyID             string  `json:"key_id"`
	Auth              string  `json:"auth,omitempty"`
	CertSHA256        string  `json:"cert_sha256,omitempty"`
	Action            string  `json:"action"`
	Model             *string `json:"model"`
	PromptHash        *string `json:"prompt_hash"`
	RoutingPolicy     *string `json:"routing_policy"`
	ResidencyBoundary *string `json:"residency_boundary"`
	Status            string  `json:"status"`
	PromptTokens      *int64  `json:"prompt_tokens"`
	CompletionTokens  *int64  `json:"completion_tokens"`
	LatencyUS         int64   `json:"latency_us"`
	JournalHash       string  `json:"journal_hash"`
	// Charges is what the request was charged, when the entry carries it (docs/JOURNAL.md).
	Charges []JournalCharge `json:"charges,omitempty"`
	// Replica is the chain's sovereign id (pages only, not part of the entry).
	Replica string `json:"replica,omitempty"`
}

// ActivityPage is one page of entries; NextCursor continues it ("" at the end).
type ActivityPage struct {
	Object     string         `json:"object"`
	Data       []JournalEntry `json:"data"`
	NextCursor *string        `json:"next_cursor"`
}

// Query reads one page (format json).
func (s *ActivityService) Query(ctx context.Context, q ActivityQuery) (*ActivityPage, error) {
	r, err := jsonRequest(http.MethodPost, "/v1/activity/logs", activityBody{q, "json"}, true)
	if err != nil {
		return nil, err
	}
	var out ActivityPage
	if _, err := s.c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ActivityPager iterates over every entry of every page:
//
//	it := client.Activity.QueryAll(ctx, q)
//	for it.Next() { e := it.Current() … }
//	if err := it.Err(); err != nil { … }
type ActivityPager struct {
	s      *ActivityService
	ctx    context.Context
	q      ActivityQuery
	page   []JournalEntry
	i      int
	cur    JournalEntry
	err    error
	last   bool
	Pages  int
	primed bool
}

// QueryAll iterates over all pages from q (q.Limit is the page size).
func (s *ActivityService) QueryAll(ctx context.Context, q ActivityQuery) *ActivityPager {
	return &ActivityPager{s: s, ctx: ctx, q: q}
}

// Next advances to the next entry, fetching pages as needed.
func (p *ActivityPager) Next() bool {
	for p.i >= len(p.page) {
		if p.err != nil || (p.primed && p.last) {
			return false
		}
		page, err := p.s.Query(p.ctx, p.q)
		if err != nil {
			p.err = err
			return false
		}
		p.primed = true
		p.Pages++
		p.page, p.i = page.Data, 0
		if page.NextCursor == nil || *page.NextCursor == "" {
			p.last = true
		} else {
			p.q.Cursor = *page.NextCursor
		}
	}
	p.cur = p.page[p.i]
	p.i++
	return true
}

// Current is the entry Next reached.
func (p *ActivityPager) Current() JournalEntry { return p.cur }

// Err is the error that stopped the iteration.
func (p *ActivityPager) Err() error { return p.err }

// All collects every entry.
func (p *ActivityPager) All() ([]JournalEntry, error) {
	var out []JournalEntry
	for p.Next() {
		out = append(out, p.Current())
	}
	return out, p.Err()
}

// Export formats.
const (
	ExportJSONL = "jsonl"
	ExportCSV   = "csv"
)

// Export returns the entries matching filter (nil: all) as `jsonl` (each line exactly as the
// chain holds it: verifiable with VerifyJournalExport) or `csv`.
func (s *ActivityService) Export(ctx context.Context, format string, filter *ActivityQuery) ([]byte, error) {
	if format != ExportJSONL && format != ExportCSV {
		return nil, fmt.Errorf("sovereign: export format must be %q or %q", ExportJSONL, ExportCSV)
	}
	var q ActivityQuery
	if filter != nil {
		q = *filter
	}
	r, err := jsonRequest(http.MethodPost, "/v1/activity/logs", activityBody{q, format}, true)
	if err != nil {
		return nil, err
	}
	r.header = http.Header{"Accept": {"*/*"}}
	resp, err := s.c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return resp.body, nil
}

// ---------------------------------------------------------------- journal (admin)

// JournalService: the admin journal API (verifyJournal, createJournalCheckpoint,
// listJournalCheckpoints).
type JournalService struct{ c *Client }

// JournalProblem locates a verification failure.
type JournalProblem struct {
	File   *string `json:"file,omitempty"`
	Line   *int64  `json:"line,omitempty"`
	Seq    *int64  `json:"seq,omitempty"`
	Reason string  `json:"reason"`
}

// ChainReport is one chain's verification.
type ChainReport struct {
	SovereignID        string          `json:"sovereign_id"`
	OK                 bool            `json:"ok"`
	Entries            int64           `json:"entries"`
	Pruned             *int64          `json:"pruned,omitempty"`
	Segments           int64           `json:"segments"`
	HeadSeq            int64           `json:"head_seq"`
	HeadHash           *string         `json:"head_hash"`
	CheckpointsChecked int64           `json:"checkpoints_checked"`
	TornTailBytes      *int64          `json:"torn_tail_bytes"`
	Problem            *JournalProblem `json:"problem"`
}

// JournalVerification is the server's verification report.
type JournalVerification struct {
	Object            string          `json:"object"`
	OK                bool            `json:"ok"`
	Report            string          `json:"report"`
	CheckpointProblem *JournalProblem `json:"checkpoint_problem"`
	Chains            []ChainReport   `json:"chains"`
	Replicas          []ChainReport   `json:"replicas,omitempty"`
}

// Verify runs the gateway's verification of its own journal (200 whatever the verdict).
func (s *JournalService) Verify(ctx context.Context) (*JournalVerification, error) {
	var out JournalVerification
	if _, err := s.c.call(ctx, &request{method: http.MethodGet, path: "/v1/admin/journal/verify", idempotent: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Checkpoint is a signed checkpoint of a chain: Ed25519 over the JCS of the object without
// `signature`, by the key in PublicKey. Raw keeps the object as received (what is verified).
type Checkpoint struct {
	Count       int64  `json:"count"`
	HeadHash    string `json:"head_hash"`
	PublicKey   string `json:"public_key"`
	Seq         int64  `json:"seq"`
	Signature   string `json:"signature"`
	SovereignID string `json:"sovereign_id"`
	Timestamp   string `json:"timestamp"`

	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw object besides the typed fields.
func (c *Checkpoint) UnmarshalJSON(b []byte) error {
	type plain Checkpoint
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = Checkpoint(p)
	c.Raw = append(json.RawMessage(nil), bytes.TrimSpace(b)...)
	return nil
}

// MarshalJSON writes the raw object when there is one.
func (c Checkpoint) MarshalJSON() ([]byte, error) {
	if len(c.Raw) > 0 {
		return c.Raw, nil
	}
	type plain Checkpoint
	return json.Marshal(plain(c))
}

// CheckpointList is the answer of ListCheckpoints.
type CheckpointList struct {
	Object string       `json:"object"`
	Data   []Checkpoint `json:"data"`
}

// CreateCheckpoint signs the chain's durable head now.
func (s *JournalService) CreateCheckpoint(ctx context.Context) (*Checkpoint, error) {
	r := &request{method: http.MethodPost, path: "/v1/admin/journal/checkpoints", idempotent: true}
	var out Checkpoint
	if _, err := s.c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListCheckpoints lists the signed checkpoints.
func (s *JournalService) ListCheckpoints(ctx context.Context) (*CheckpointList, error) {
	var out CheckpointList
	if _, err := s.c.call(ctx, &request{method: http.MethodGet, path: "/v1/admin/journal/checkpoints", idempotent: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
