package sovereign

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ---------------------------------------------------------------- embeddings

// EmbeddingsService: POST /v1/embeddings (createEmbedding).
type EmbeddingsService struct{ c *Client }

// EmbeddingRequest: Input is a string or a list of strings.
type EmbeddingRequest struct {
	Model          string         `json:"model"`
	Input          any            `json:"input"`
	EncodingFormat string         `json:"encoding_format,omitempty"`
	Dimensions     *int           `json:"dimensions,omitempty"`
	User           string         `json:"user,omitempty"`
	Extra          map[string]any `json:"-"`
}

// Embedding is one vector.
type Embedding struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float64 `json:"embedding"`
}

// EmbeddingResponse is the list of vectors, with the gateway's metadata.
type EmbeddingResponse struct {
	Object string      `json:"object"`
	Data   []Embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  *Usage      `json:"usage,omitempty"`

	Sovereignty Sovereignty `json:"-"`
}

// Create embeds the input (float vectors).
func (s *EmbeddingsService) Create(ctx context.Context, req EmbeddingRequest) (*EmbeddingResponse, error) {
	body, err := withExtra(req, req.Extra)
	if err != nil {
		return nil, err
	}
	r := &request{method: http.MethodPost, path: "/v1/embeddings", body: body,
		contentType: "application/json", idempotent: true}
	var out EmbeddingResponse
	resp, err := s.c.call(ctx, r, &out)
	if err != nil {
		return nil, err
	}
	out.Sovereignty = SovereigntyFromHeader(resp.header)
	return &out, nil
}

func withExtra(v any, extra map[string]any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("sovereign: encoding the request: %w", err)
	}
	if len(extra) == 0 {
		return b, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, x := range extra {
		m[k] = x
	}
	return json.Marshal(m)
}

// ---------------------------------------------------------------- models

// ModelsService: GET /v1/models (listModels), GET /v1/models/{id} (retrieveModel).
type ModelsService struct{ c *Client }

// Model is a served model, with the gateway's family, kind, languages, region and locality.
type Model struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	OwnedBy           string   `json:"owned_by"`
	Family            string   `json:"family"`
	Kind              string   `json:"kind"`
	Languages         []string `json:"languages"`
	Region            *string  `json:"region"`
	Local             *bool    `json:"local"`
	ContextWindow     *int     `json:"context_window,omitempty"`
	Dimensions        *int     `json:"dimensions,omitempty"`
	InputCostPerMTok  *float64 `json:"input_cost_per_mtok,omitempty"`
	OutputCostPerMTok *float64 `json:"output_cost_per_mtok,omitempty"`
}

// RegionName is the region, "" when none (auto-router).
func (m Model) RegionName() string {
	if m.Region == nil {
		return ""
	}
	return *m.Region
}

// ModelList is the answer of List.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// List lists the models.
func (s *ModelsService) List(ctx context.Context) (*ModelList, error) {
	var out ModelList
	_, err := s.c.call(ctx, &request{method: http.MethodGet, path: "/v1/models", idempotent: true}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Get reads one model.
func (s *ModelsService) Get(ctx context.Context, id string) (*Model, error) {
	var out Model
	_, err := s.c.call(ctx, &request{method: http.MethodGet, path: "/v1/models/" + pathEscape(id), idempotent: true}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ---------------------------------------------------------------- documents

// DocumentsService: the team's document library (uploadDocument, listDocuments,
// retrieveDocument, deleteDocument).
type DocumentsService struct{ c *Client }

// Document is a stored document's record.
type Document struct {
	ID         string         `json:"id"`
	Object     string         `json:"object"`
	Filename   string         `json:"filename"`
	Collection string         `json:"collection"`
	Kind       string         `json:"kind"`
	Bytes      int64          `json:"bytes"`
	SHA256     string         `json:"sha256"`
	Pages      *int           `json:"pages"`
	Chunks     int            `json:"chunks"`
	Status     string         `json:"status"`
	Metadata   map[string]any `json:"metadata"`
	Model      string         `json:"model"`
	CreatedAt  int64          `json:"created_at"`

	// Created is true when the upload stored it now (201), false when the collection already
	// held these bytes (200).
	Created bool `json:"-"`
}

// DocumentUpload is an upload: a file's name and content, optional collection and metadata.
type DocumentUpload struct {
	Filename    string
	Content     io.Reader
	ContentType string
	Collection  string
	Metadata    map[string]any
	// NoWait answers at once with the document `in_progress` (poll Get); by default Upload
	// waits until it is searchable (`?wait=true`, at most 300 s on the gateway).
	NoWait bool
}

// Upload stores a document (multipart `file`, `collection`, `metadata`); synchronous unless
// NoWait: the answer comes when it is searchable.
func (s *DocumentsService) Upload(ctx context.Context, up DocumentUpload) (*Document, error) {
	if up.Content == nil {
		return nil, fmt.Errorf("sovereign: DocumentUpload.Content is nil")
	}
	content, err := io.ReadAll(up.Content)
	if err != nil {
		return nil, fmt.Errorf("sovereign: reading the document: %w", err)
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	ct := up.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	name := up.Filename
	if name == "" {
		name = "document"
	}
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, escapeQuotes(name)))
	h.Set("Content-Type", ct)
	part, _ := w.CreatePart(h)
	part.Write(content)
	if up.Collection != "" {
		w.WriteField("collection", up.Collection)
	}
	if up.Metadata != nil {
		mb, err := json.Marshal(up.Metadata)
		if err != nil {
			return nil, fmt.Errorf("sovereign: encoding metadata: %w", err)
		}
		w.WriteField("metadata", string(mb))
	}
	w.Close()
	path := "/v1/documents/upload?wait=true"
	if up.NoWait {
		path = "/v1/documents/upload?wait=false"
	}
	r := &request{method: http.MethodPost, path: path, body: buf.Bytes(),
		contentType: w.FormDataContentType(), idempotent: false}
	var out Document
	resp, err := s.c.call(ctx, r, &out)
	if err != nil {
		return nil, err
	}
	out.Created = resp.status == http.StatusCreated
	return &out, nil
}

// UploadFile uploads the file at path.
func (s *DocumentsService) UploadFile(ctx context.Context, path, collection string) (*Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return s.Upload(ctx, DocumentUpload{Filename: filepath.Base(path), Content: f, Collection: collection})
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"")

func escapeQuotes(s string) string { return quoteEscaper.Replace(s) }

// DocumentListParams filters and pages List.
type DocumentListParams struct {
	Collection string
	After      string
	Limit      int
}

// DocumentList is a page of documents.
type DocumentList struct {
	Object  string     `json:"object"`
	Data    []Document `json:"data"`
	FirstID *string    `json:"first_id"`
	LastID  *string    `json:"last_id"`
	HasMore bool       `json:"has_more"`
}

// List lists the team's documents.
func (s *DocumentsService) List(ctx context.Context, p *DocumentListParams) (*DocumentList, error) {
	q := url.Values{}
	if p != nil {
		if p.Collection != "" {
			q.Set("collection", p.Collection)
		}
		if p.After != "" {
			q.Set("after", p.After)
		}
		if p.Limit > 0 {
			q.Set("limit", strconv.Itoa(p.Limit))
		}
	}
	var out DocumentList
	_, err := s.c.call(ctx, &request{method: http.MethodGet, path: "/v1/documents", query: q, idempotent: true}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Get reads one document's record.
func (s *DocumentsService) Get(ctx context.Context, id string) (*Document, error) {
	var out Document
	_, err := s.c.call(ctx, &request{method: http.MethodGet, path: "/v1/documents/" + pathEscape(id), idempotent: true}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Deleted is the answer of a deletion.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// Delete removes a document.
func (s *DocumentsService) Delete(ctx context.Context, id string) (*Deleted, error) {
	var out Deleted
	_, err := s.c.call(ctx, &request{method: http.MethodDelete, path: "/v1/documents/" + pathEscape(id), idempotent: true}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ---------------------------------------------------------------- retrieval

// RAGService: POST /v1/rag/query (queryRag).
type RAGService struct{ c *Client }

// RAGFilters narrows a query.
type RAGFilters struct {
	DocumentIDs []string       `json:"document_ids,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// RAGQuery is a retrieval query; with Generate, an answer is written from the citations.
type RAGQuery struct {
	Query         string      `json:"query"`
	Collection    string      `json:"collection,omitempty"`
	TopK          int         `json:"top_k,omitempty"`
	Filters       *RAGFilters `json:"filters,omitempty"`
	MinConfidence *float64    `json:"min_confidence,omitempty"`
	Generate      bool        `json:"generate,omitempty"`
	Model         string      `json:"model,omitempty"`
	MaxTokens     *int        `json:"max_tokens,omitempty"`
	Temperature   *float64    `json:"temperature,omitempty"`
	User          string      `json:"user,omitempty"`
}

// Citation is a cited chunk: the document, its page (PDF) or paragraph, the text, and scores.
type Citation struct {
	DocumentID string  `json:"document_id"`
	Filename   string  `json:"filename"`
	Page       *int    `json:"page"`
	Paragraph  int     `json:"paragraph"`
	ChunkID    string  `json:"chunk_id"`
	Text       string  `json:"text"`
	Score      float64 `json:"score"`
	Confidence float64 `json:"confidence"`
}

// RAGResult is the answer of a retrieval query.
type RAGResult struct {
	Object        string     `json:"object"`
	Query         string     `json:"query"`
	Collection    string     `json:"collection"`
	Model         string     `json:"model"`
	Confidence    float64    `json:"confidence"`
	Citations     []Citation `json:"citations"`
	Answer        *string    `json:"answer,omitempty"`
	AnswerModel   *string    `json:"answer_model,omitempty"`
	AnswerSkipped *string    `json:"answer_skipped,omitempty"`
	Usage         *Usage     `json:"usage,omitempty"`

	Sovereignty Sovereignty `json:"-"`
}

// Query searches the team's collection.
func (s *RAGService) Query(ctx context.Context, q RAGQuery) (*RAGResult, error) {
	r, err := jsonRequest(http.MethodPost, "/v1/rag/query", q, true)
	if err != nil {
		return nil, err
	}
	var out RAGResult
	resp, err := s.c.call(ctx, r, &out)
	if err != nil {
		return nil, err
	}
	out.Sovereignty = SovereigntyFromHeader(resp.header)
	return &out, nil
}
