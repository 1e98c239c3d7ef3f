package sovereign

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// ChatService: POST /v1/chat/completions (createChatCompletion).
type ChatService struct{ c *Client }

// ChatMessage is one message of a conversation.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Name    string `json:"name,omitempty"`
}

// Routing profiles (`routing.profile` / `routing_preference`).
const (
	RoutingCost        = "cost"
	RoutingPerformance = "performance"
	RoutingBalanced    = "balanced"
)

// Routing holds the gateway's routing hints (removed before the request goes upstream).
type Routing struct {
	// Profile: cost, performance or balanced (wins over RoutingPreference).
	Profile string `json:"profile,omitempty"`
	// Classification: a data classification label, e.g. "sensitive" (the
	// X-Data-Classification header wins over it).
	Classification string `json:"classification,omitempty"`
}

// StreamOptions of the convention (`include_usage`).
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatCompletionRequest is the body of a chat completion. Extra fields of the OpenAI
// convention not named here go in Extra.
type ChatCompletionRequest struct {
	Model             string         `json:"model"`
	Messages          []ChatMessage  `json:"messages"`
	MaxTokens         *int           `json:"max_tokens,omitempty"`
	Temperature       *float64       `json:"temperature,omitempty"`
	TopP              *float64       `json:"top_p,omitempty"`
	Stop              []string       `json:"stop,omitempty"`
	Seed              *int64         `json:"seed,omitempty"`
	User              string         `json:"user,omitempty"`
	Stream            bool           `json:"stream,omitempty"`
	StreamOptions     *StreamOptions `json:"stream_options,omitempty"`
	Routing           *Routing       `json:"routing,omitempty"`
	RoutingPreference string         `json:"routing_preference,omitempty"`

	// Extra fields merged into the body.
	Extra map[string]any `json:"-"`
	// DataClassification is sent as the X-Data-Classification header.
	DataClassification string `json:"-"`
	// ActorID is sent as the X-Actor-ID header (the journal's actor when User is empty).
	ActorID string `json:"-"`
}

func (r ChatCompletionRequest) body() ([]byte, error) {
	type plain ChatCompletionRequest
	b, err := json.Marshal(plain(r))
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range r.Extra {
		m[k] = v
	}
	return json.Marshal(m)
}

func (r ChatCompletionRequest) headers() http.Header {
	h := http.Header{}
	if r.DataClassification != "" {
		h.Set("X-Data-Classification", r.DataClassification)
	}
	if r.ActorID != "" {
		h.Set("X-Actor-ID", r.ActorID)
	}
	return h
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// ChatChoice is one choice of a completion.
type ChatChoice struct {
	Index        int         `json:"index"`
	Message      ChatMessage `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

// ChatCompletion is a whole answer, with the gateway's metadata.
type ChatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []ChatChoice `json:"choices"`
	Usage             *Usage       `json:"usage,omitempty"`
	SystemFingerprint string       `json:"system_fingerprint,omitempty"`

	Sovereignty Sovereignty `json:"-"`
}

// Text is the first choice's content.
func (c *ChatCompletion) Text() string {
	if len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].Message.Content
}

// Create answers a chat completion (Stream is forced off; use Stream for SSE).
func (s *ChatService) Create(ctx context.Context, req ChatCompletionRequest) (*ChatCompletion, error) {
	req.Stream = false
	req.StreamOptions = nil
	b, err := req.body()
	if err != nil {
		return nil, fmt.Errorf("sovereign: encoding the request: %w", err)
	}
	r := &request{method: http.MethodPost, path: "/v1/chat/completions", body: b,
		contentType: "application/json", header: req.headers(), idempotent: true}
	var out ChatCompletion
	resp, err := s.c.call(ctx, r, &out)
	if err != nil {
		return nil, err
	}
	out.Sovereignty = SovereigntyFromHeader(resp.header)
	return &out, nil
}

// ChatDelta is a chunk's increment.
type ChatDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

// ChatChunkChoice is one choice of a chunk.
type ChatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        ChatDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

// ChatCompletionChunk is one SSE event of a streamed completion.
type ChatCompletionChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []ChatChunkChoice `json:"choices"`
	Usage   *Usage            `json:"usage,omitempty"`
}

// ChatStream iterates over a streamed completion:
//
//	for stream.Next() { fmt.Print(stream.Current().Choices[0].Delta.Content) }
//	if err := stream.Err(); err != nil { … }
//
// Sovereignty is set before the first chunk is read.
type ChatStream struct {
	Sovereignty Sovereignty
	Header      http.Header

	body    io.ReadCloser
	cancel  context.CancelFunc
	reader  *bufio.Reader
	current ChatCompletionChunk
	err     error
	done    bool
	text    strings.Builder
	once    sync.Once
}

// Stream starts a streamed completion; the answer's headers (and so Sovereignty) are in when
// it returns. Close the stream when done (Next closes it at the end).
func (s *ChatService) Stream(ctx context.Context, req ChatCompletionRequest) (*ChatStream, error) {
	req.Stream = true
	b, err := req.body()
	if err != nil {
		return nil, fmt.Errorf("sovereign: encoding the request: %w", err)
	}
	r := &request{method: http.MethodPost, path: "/v1/chat/completions", body: b,
		contentType: "application/json", header: req.headers(), idempotent: true, stream: true}
	resp, err := s.c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return &ChatStream{
		Sovereignty: SovereigntyFromHeader(resp.header),
		Header:      resp.header,
		body:        resp.stream,
		cancel:      resp.cancel,
		reader:      bufio.NewReaderSize(resp.stream, 64<<10),
	}, nil
}

// Next reads the next chunk; false at the end of the stream or on an error (see Err).
func (st *ChatStream) Next() bool {
	if st.done {
		return false
	}
	for {
		event, data, err := st.readEvent()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if data == nil {
					st.err = &ConnectionError{Err: errors.New("the stream ended before [DONE]"), sent: true}
					st.finish()
					return false
				}
			} else {
				st.err = &ConnectionError{Err: err, sent: true, timeout: isTimeout(err)}
				st.finish()
				return false
			}
		}
		if data == nil {
			continue
		}
		trimmed := bytes.TrimSpace(data)
		if string(trimmed) == "[DONE]" {
			st.finish()
			return false
		}
		if event == "error" || bytes.HasPrefix(trimmed, []byte(`{"error"`)) {
			st.err = newAPIError(http.StatusBadGateway, st.Header, trimmed)
			st.finish()
			return false
		}
		var chunk ChatCompletionChunk
		if jerr := json.Unmarshal(trimmed, &chunk); jerr != nil {
			st.err = fmt.Errorf("sovereign: undecodable stream event: %w", jerr)
			st.finish()
			return false
		}
		st.current = chunk
		for _, c := range chunk.Choices {
			if c.Index == 0 {
				st.text.WriteString(c.Delta.Content)
			}
		}
		return true
	}
}

// readEvent reads one SSE event: its `event:` name and joined `data:` lines (nil data for an
// event without data, e.g. a comment).
func (st *ChatStream) readEvent() (string, []byte, error) {
	var event string
	var data []byte
	seen := false
	for {
		line, err := st.reader.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if seen {
				return event, data, nil
			}
			return "", nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if seen {
				return event, data, nil
			}
			if err != nil {
				return "", nil, err
			}
			continue
		}
		switch {
		case line[0] == ':':
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if seen {
				data = append(data, '\n')
			}
			data = append(data, v...)
			seen = true
		case bytes.HasPrefix(line, []byte("event:")):
			event = strings.TrimSpace(string(line[6:]))
		}
		if err != nil {
			if seen {
				return event, data, nil
			}
			return "", nil, err
		}
	}
}

// Current is the chunk Next read.
func (st *ChatStream) Current() ChatCompletionChunk { return st.current }

// Err is the error that ended the stream, nil after [DONE].
func (st *ChatStream) Err() error { return st.err }

// Text is the first choice's content so far.
func (st *ChatStream) Text() string { return st.text.String() }

// Close abandons the stream (idempotent).
func (st *ChatStream) Close() error {
	st.finish()
	return nil
}

func (st *ChatStream) finish() {
	st.done = true
	st.once.Do(func() {
		st.body.Close()
		if st.cancel != nil {
			st.cancel()
		}
	})
}
