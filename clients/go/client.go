// Package sovereign is the Go client of Sovereign Gateway, an OpenAI-compatible API gateway
// that routes by language, data classification and residency, journals every request in a
// hash chain and signs checkpoints of it.
//
// The surface follows clients/SPEC.md: chat completions (whole and streamed) with the
// gateway's sovereignty metadata on every response, embeddings, models, documents and
// retrieval, the activity journal (query, export, offline verification), and the admin API.
// Only the standard library is used.
package sovereign

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Version of this client library.
const Version = "0.1.0"

const (
	defaultMaxRetries = 2
	defaultTimeout    = 10 * time.Minute
	maxRetryWait      = 60 * time.Second
	initialBackoff    = 500 * time.Millisecond
	maxBackoff        = 8 * time.Second
)

// Client is a Sovereign Gateway client. It is safe for concurrent use.
type Client struct {
	baseURL    string
	apiKey     string
	httpClient *http.Client
	maxRetries int
	timeout    time.Duration
	headers    http.Header

	caBundle   string
	clientCert string
	clientKey  string

	// Services, one per area of the API.
	Chat       *ChatService
	Embeddings *EmbeddingsService
	Models     *ModelsService
	Documents  *DocumentsService
	RAG        *RAGService
	Activity   *ActivityService
	Journal    *JournalService
	Admin      *AdminService

	// sleep waits d or until ctx is done (replaceable in tests).
	sleep func(ctx context.Context, d time.Duration) error
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sets the bearer API key (`sk-sov-…`). Without it, SOVEREIGN_API_KEY is used; a
// client authenticated by a client certificate needs none. With neither, NewClient fails.
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = key } }

// WithHTTPClient uses the given *http.Client (its Transport is cloned and given the TLS
// settings of WithCABundle / WithClientCertificate when those are used too).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.httpClient = h } }

// WithCABundle trusts the CA certificates in the PEM file at path (instead of the system
// roots) for an https gateway.
func WithCABundle(path string) Option { return func(c *Client) { c.caBundle = path } }

// WithClientCertificate presents the PEM certificate (chain) and key for mutual TLS. The
// gateway maps the certificate to a team and role: no API key is needed.
func WithClientCertificate(certPath, keyPath string) Option {
	return func(c *Client) { c.clientCert, c.clientKey = certPath, keyPath }
}

// WithMaxRetries sets how many times a retryable failure (429, 502/503/504, a connection
// error) is retried; 0 disables retries. Default 2.
func WithMaxRetries(n int) Option {
	return func(c *Client) {
		if n < 0 {
			n = 0
		}
		c.maxRetries = n
	}
}

// WithTimeout bounds each attempt: a whole answer must arrive within it; a stream's headers
// must (the stream itself may run longer). Default 10 minutes; 0 means no limit.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithHeader adds a header to every request (e.g. X-Actor-ID).
func WithHeader(name, value string) Option {
	return func(c *Client) { c.headers.Add(name, value) }
}

// NewClient returns a client of the gateway at baseURL (`http://host:port`, with or without a
// trailing `/v1`; "" means SOVEREIGN_BASE_URL). Only the SOVEREIGN_* variables and the options
// are read, never OPENAI_*. It fails when there is no address, no key (WithAPIKey or
// SOVEREIGN_API_KEY) and no client certificate, or when a TLS file cannot be read.
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	if strings.TrimSpace(baseURL) == "" {
		baseURL = os.Getenv("SOVEREIGN_BASE_URL")
	}
	c := &Client{
		baseURL:    normalizeBaseURL(baseURL),
		apiKey:     os.Getenv("SOVEREIGN_API_KEY"),
		maxRetries: defaultMaxRetries,
		timeout:    defaultTimeout,
		headers:    http.Header{},
		sleep:      sleepCtx,
	}
	for _, o := range opts {
		o(c)
	}
	if c.baseURL == "" {
		return nil, errors.New("sovereign: the gateway's address is missing: pass it to NewClient or set SOVEREIGN_BASE_URL")
	}
	if err := c.configureTLS(); err != nil {
		return nil, err
	}
	if c.apiKey == "" && c.clientCert == "" && !presentsCertificate(c.httpClient) {
		return nil, errors.New("sovereign: the gateway's API key is missing: use WithAPIKey or set SOVEREIGN_API_KEY (OPENAI_* variables are never read), or WithClientCertificate for a certificate mapped to an identity")
	}
	c.Chat = &ChatService{c: c}
	c.Embeddings = &EmbeddingsService{c: c}
	c.Models = &ModelsService{c: c}
	c.Documents = &DocumentsService{c: c}
	c.RAG = &RAGService{c: c}
	c.Activity = &ActivityService{c: c}
	c.Journal = &JournalService{c: c}
	c.Admin = &AdminService{
		Teams:     &TeamsService{c: c},
		Keys:      &KeysService{c: c},
		Usage:     &UsageService{c: c},
		Policies:  &PoliciesService{c: c},
		Guardrail: &GuardrailService{c: c},
	}
	return c, nil
}

// presentsCertificate: the HTTP client (e.g. from WithHTTPClient) is set up for mutual TLS.
func presentsCertificate(h *http.Client) bool {
	if h == nil {
		return false
	}
	t, ok := h.Transport.(*http.Transport)
	return ok && t.TLSClientConfig != nil &&
		(len(t.TLSClientConfig.Certificates) > 0 || t.TLSClientConfig.GetClientCertificate != nil)
}

// BaseURL is the gateway's address as the client uses it (without `/v1`).
func (c *Client) BaseURL() string { return c.baseURL }

func normalizeBaseURL(u string) string {
	u = strings.TrimRight(strings.TrimSpace(u), "/")
	u = strings.TrimSuffix(u, "/v1")
	return strings.TrimRight(u, "/")
}

func (c *Client) configureTLS() error {
	if c.caBundle == "" && c.clientCert == "" {
		if c.httpClient == nil {
			c.httpClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		}
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.caBundle != "" {
		pem, err := os.ReadFile(c.caBundle)
		if err != nil {
			return fmt.Errorf("sovereign: reading the CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("sovereign: no PEM certificate in the CA bundle %s", c.caBundle)
		}
		cfg.RootCAs = pool
	}
	if c.clientCert != "" {
		cert, err := tls.LoadX509KeyPair(c.clientCert, c.clientKey)
		if err != nil {
			return fmt.Errorf("sovereign: loading the client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	var base *http.Transport
	if c.httpClient != nil {
		if t, ok := c.httpClient.Transport.(*http.Transport); ok {
			base = t.Clone()
		} else if c.httpClient.Transport != nil {
			return errors.New("sovereign: WithCABundle/WithClientCertificate need an *http.Transport in the HTTP client")
		}
	}
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	base.TLSClientConfig = cfg
	hc := &http.Client{}
	if c.httpClient != nil {
		*hc = *c.httpClient
	}
	hc.Transport = base
	c.httpClient = hc
	return nil
}

// Sovereignty is the gateway's metadata about an answer: which gateway answered, the journal
// entry's request id, and for inference the routing policy and the region that served.
type Sovereignty struct {
	SovereignID   string // X-Sovereign-ID
	AuditTraceID  string // X-Audit-Trace-ID (the journal entry's request_id)
	RoutePolicy   string // X-Route-Policy
	DataResidency string // X-Data-Residency
}

// SovereigntyFromHeader reads the metadata from response headers.
func SovereigntyFromHeader(h http.Header) Sovereignty {
	return Sovereignty{
		SovereignID:   h.Get("X-Sovereign-ID"),
		AuditTraceID:  h.Get("X-Audit-Trace-ID"),
		RoutePolicy:   h.Get("X-Route-Policy"),
		DataResidency: h.Get("X-Data-Residency"),
	}
}

// request is one API call, replayable for retries.
type request struct {
	method      string
	path        string
	query       url.Values
	body        []byte
	contentType string
	header      http.Header
	// idempotent: safe to retry after it was sent (non-idempotent calls are retried only on
	// 429 and on failures before anything was sent).
	idempotent bool
	stream     bool
}

// response is a successful answer: status, headers, and the body (read whole unless stream).
type response struct {
	status int
	header http.Header
	body   []byte
	stream io.ReadCloser
	cancel context.CancelFunc
}

func jsonRequest(method, path string, v any, idempotent bool) (*request, error) {
	r := &request{method: method, path: path, idempotent: idempotent}
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("sovereign: encoding the request: %w", err)
		}
		r.body = b
		r.contentType = "application/json"
	}
	return r, nil
}

// do sends r with retries and returns a 2xx answer or an error (*APIError, *ConnectionError).
func (c *Client) do(ctx context.Context, r *request) (*response, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	for attempt := 0; ; attempt++ {
		resp, err := c.once(ctx, r)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if attempt >= c.maxRetries || !c.retryable(r, err) {
			return nil, err
		}
		if werr := c.sleep(ctx, retryDelay(err, attempt)); werr != nil {
			return nil, werr
		}
	}
}

func (c *Client) retryable(r *request, err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		if apiErr.noRetry || errors.Is(apiErr, ErrBudgetExceeded) || apiErr.Type == "guardrail_violation" {
			return false
		}
		switch {
		case apiErr.StatusCode == http.StatusTooManyRequests:
			return true // refused before any effect
		case apiErr.StatusCode == 502, apiErr.StatusCode == 503, apiErr.StatusCode == 504:
			return r.idempotent
		}
		return false
	}
	var connErr *ConnectionError
	if errors.As(err, &connErr) {
		return r.idempotent || !connErr.sent
	}
	return false
}

// retryDelay: Retry-After / X-RateLimit-Reset when the answer gave one, else exponential
// backoff with jitter (the upper half of the doubled interval); capped at 60 s.
func retryDelay(err error, attempt int) time.Duration {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		if apiErr.RetryAfter > 0 {
			return capWait(apiErr.RetryAfter)
		}
		if !apiErr.Reset.IsZero() {
			if d := time.Until(apiErr.Reset); d > 0 {
				return capWait(d)
			}
		}
	}
	d := initialBackoff << uint(attempt)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	half := d / 2
	return half + time.Duration(rand.Int63n(int64(half)+1))
}

func capWait(d time.Duration) time.Duration {
	if d > maxRetryWait {
		return maxRetryWait
	}
	return d
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// once sends one attempt.
func (c *Client) once(ctx context.Context, r *request) (*response, error) {
	actx, cancel := context.WithCancel(ctx)
	var timedOut int32
	var timer *time.Timer
	if c.timeout > 0 {
		timer = time.AfterFunc(c.timeout, func() {
			atomic.StoreInt32(&timedOut, 1)
			cancel()
		})
	}
	stop := func() bool { return timer == nil || timer.Stop() }
	fail := func(err error) (*response, error) {
		stop()
		cancel()
		return nil, err
	}

	u := c.baseURL + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(actx, r.method, u, body)
	if err != nil {
		return fail(fmt.Errorf("sovereign: %w", err))
	}
	for k, vs := range c.headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	for k, vs := range r.header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.stream {
		req.Header.Set("Accept", "text/event-stream")
	} else if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", "sovereign-go/"+Version)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}

	var sent int32
	trace := &sentTracker{flag: &sent}
	req = req.WithContext(withWroteRequest(actx, trace))

	hresp, err := c.httpClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		return fail(&ConnectionError{
			Err:     err,
			timeout: atomic.LoadInt32(&timedOut) == 1 || isTimeout(err),
			sent:    atomic.LoadInt32(&sent) == 1,
		})
	}
	if hresp.StatusCode >= 200 && hresp.StatusCode < 300 && r.stream {
		if !stop() && atomic.LoadInt32(&timedOut) == 1 {
			hresp.Body.Close()
			return fail(&ConnectionError{Err: errors.New("timed out"), timeout: true, sent: true})
		}
		return &response{status: hresp.StatusCode, header: hresp.Header, stream: hresp.Body, cancel: cancel}, nil
	}
	data, rerr := io.ReadAll(hresp.Body)
	hresp.Body.Close()
	stop()
	cancel()
	if rerr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &ConnectionError{Err: rerr, timeout: atomic.LoadInt32(&timedOut) == 1 || isTimeout(rerr), sent: true}
	}
	if hresp.StatusCode >= 200 && hresp.StatusCode < 300 {
		return &response{status: hresp.StatusCode, header: hresp.Header, body: data}, nil
	}
	return nil, newAPIError(hresp.StatusCode, hresp.Header, data)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// sentTracker records that the request was written (for the retry rule of non-idempotent calls).
type sentTracker struct {
	once sync.Once
	flag *int32
}

func withWroteRequest(ctx context.Context, t *sentTracker) context.Context {
	mark := func() { t.once.Do(func() { atomic.StoreInt32(t.flag, 1) }) }
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: mark,
		WroteRequest: func(httptrace.WroteRequestInfo) { mark() },
	})
}

func (c *Client) call(ctx context.Context, r *request, out any) (*response, error) {
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	if out != nil && len(resp.body) > 0 {
		if err := json.Unmarshal(resp.body, out); err != nil {
			return resp, fmt.Errorf("sovereign: decoding the answer to %s %s: %w", r.method, r.path, err)
		}
	}
	return resp, nil
}

func pathEscape(s string) string { return url.PathEscape(s) }

func parseRetryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

func parseReset(h http.Header) time.Time {
	v := strings.TrimSpace(h.Get("X-RateLimit-Reset"))
	if v == "" {
		return time.Time{}
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 {
		return time.Unix(0, int64(secs*float64(time.Second)))
	}
	return time.Time{}
}
