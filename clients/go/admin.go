package sovereign

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// AdminService groups the admin API (an admin key; usage also an auditor for its own team).
type AdminService struct {
	Teams     *TeamsService
	Keys      *KeysService
	Usage     *UsageService
	Policies  *PoliciesService
	Guardrail *GuardrailService
}

// ---------------------------------------------------------------- teams

// TeamsService: /v1/admin/teams (listTeams, createTeam, retrieveTeam, updateTeam, deleteTeam).
type TeamsService struct{ c *Client }

// Spend is a budget's counters, in currency units.
type Spend struct {
	Currency  string   `json:"currency"`
	Limit     *float64 `json:"limit"`
	Spent     float64  `json:"spent"`
	Reserved  float64  `json:"reserved"`
	Remaining *float64 `json:"remaining"`
}

// Team is a team as the API shows it.
type Team struct {
	ID             string   `json:"id"`
	Object         string   `json:"object"`
	Name           string   `json:"name"`
	Plan           string   `json:"plan"`
	Budget         *float64 `json:"budget"`
	TokenCapPerDay *int64   `json:"token_cap_per_day"`
	AllowedRegions []string `json:"allowed_regions"`
	SensitiveOnly  bool     `json:"sensitive_only"`
	AllowedModels  []string `json:"allowed_models"`
	Spend          *Spend   `json:"spend"`
	CreatedAt      int64    `json:"created_at"`
	UpdatedAt      int64    `json:"updated_at"`
}

// TeamCreate creates a team. Plan: development, professional or enterprise.
type TeamCreate struct {
	Name           string   `json:"name"`
	Plan           string   `json:"plan,omitempty"`
	Budget         *float64 `json:"budget,omitempty"`
	TokenCapPerDay *int64   `json:"token_cap_per_day,omitempty"`
	AllowedRegions []string `json:"allowed_regions,omitempty"`
	SensitiveOnly  bool     `json:"sensitive_only,omitempty"`
	AllowedModels  []string `json:"allowed_models,omitempty"`
}

// TeamUpdate is a PATCH: only the fields present change; a JSON null (nil in the map) clears
// `budget` and `token_cap_per_day`. E.g. TeamUpdate{"name": "x", "budget": nil}.
type TeamUpdate map[string]any

// TeamList is the answer of List.
type TeamList struct {
	Object string `json:"object"`
	Data   []Team `json:"data"`
}

// List lists the teams.
func (s *TeamsService) List(ctx context.Context) (*TeamList, error) {
	return doJSON[TeamList](ctx, s.c, http.MethodGet, "/v1/admin/teams", nil, nil, true)
}

// Create creates a team (not retried once sent).
func (s *TeamsService) Create(ctx context.Context, t TeamCreate) (*Team, error) {
	return doJSON[Team](ctx, s.c, http.MethodPost, "/v1/admin/teams", nil, t, false)
}

// Get reads a team.
func (s *TeamsService) Get(ctx context.Context, id string) (*Team, error) {
	return doJSON[Team](ctx, s.c, http.MethodGet, "/v1/admin/teams/"+pathEscape(id), nil, nil, true)
}

// Update changes a team's fields (PATCH).
func (s *TeamsService) Update(ctx context.Context, id string, patch TeamUpdate) (*Team, error) {
	if patch == nil {
		patch = TeamUpdate{}
	}
	return doJSON[Team](ctx, s.c, http.MethodPatch, "/v1/admin/teams/"+pathEscape(id), nil, patch, true)
}

// Delete deletes a team, its keys and certificate identities.
func (s *TeamsService) Delete(ctx context.Context, id string) (*Deleted, error) {
	return doJSON[Deleted](ctx, s.c, http.MethodDelete, "/v1/admin/teams/"+pathEscape(id), nil, nil, true)
}

// ---------------------------------------------------------------- keys

// KeysService: /v1/admin/keys (listKeys, createKey, retrieveKey, rotateKey, revokeKey).
type KeysService struct{ c *Client }

// APIKey is a key as the API shows it; Key (the secret) is set only in Create and Rotate
// answers.
type APIKey struct {
	ID          string   `json:"id"`
	Object      string   `json:"object"`
	TeamID      string   `json:"team_id"`
	Name        *string  `json:"name"`
	Prefix      string   `json:"prefix"`
	Role        string   `json:"role"`
	State       string   `json:"state"`
	CreatedAt   int64    `json:"created_at"`
	LastUsedAt  *int64   `json:"last_used_at"`
	ExpiresAt   *int64   `json:"expires_at"`
	RevokedAt   *int64   `json:"revoked_at"`
	RotatedTo   *string  `json:"rotated_to"`
	GraceUntil  *int64   `json:"grace_until"`
	IPAllowlist []string `json:"ip_allowlist"`
	RPM         *int64   `json:"rpm"`
	TPD         *int64   `json:"tpd"`
	Budget      *float64 `json:"budget"`
	Spend       *Spend   `json:"spend"`

	Key         string  `json:"key,omitempty"`
	Replaces    string  `json:"replaces,omitempty"`
	ReplacedKey *APIKey `json:"replaced_key,omitempty"`
}

// KeyCreate creates a key. Role: admin, member or auditor. ExpiresAt: Unix seconds or an
// ISO 8601 time.
type KeyCreate struct {
	TeamID      string   `json:"team_id"`
	Name        string   `json:"name,omitempty"`
	Role        string   `json:"role"`
	ExpiresAt   any      `json:"expires_at,omitempty"`
	IPAllowlist []string `json:"ip_allowlist,omitempty"`
	RPM         *int64   `json:"rpm,omitempty"`
	TPD         *int64   `json:"tpd,omitempty"`
	Budget      *float64 `json:"budget,omitempty"`
}

// KeyList is the answer of List.
type KeyList struct {
	Object string   `json:"object"`
	Data   []APIKey `json:"data"`
}

// List lists keys, of one team when teamID is not "".
func (s *KeysService) List(ctx context.Context, teamID string) (*KeyList, error) {
	q := url.Values{}
	if teamID != "" {
		q.Set("team_id", teamID)
	}
	return doJSON[KeyList](ctx, s.c, http.MethodGet, "/v1/admin/keys", q, nil, true)
}

// Create creates a key; the answer's Key is the secret, shown this once (not retried once sent).
func (s *KeysService) Create(ctx context.Context, k KeyCreate) (*APIKey, error) {
	return doJSON[APIKey](ctx, s.c, http.MethodPost, "/v1/admin/keys", nil, k, false)
}

// Get reads a key (never the secret).
func (s *KeysService) Get(ctx context.Context, id string) (*APIKey, error) {
	return doJSON[APIKey](ctx, s.c, http.MethodGet, "/v1/admin/keys/"+pathEscape(id), nil, nil, true)
}

// Rotate makes a successor key (in the answer, with its secret); the old key keeps working for
// graceSeconds (nil: the gateway's default). Not retried once sent.
func (s *KeysService) Rotate(ctx context.Context, id string, graceSeconds *int64) (*APIKey, error) {
	body := map[string]any{}
	if graceSeconds != nil {
		body["grace_seconds"] = *graceSeconds
	}
	return doJSON[APIKey](ctx, s.c, http.MethodPost, "/v1/admin/keys/"+pathEscape(id)+"/rotate", nil, body, false)
}

// Revoke revokes a key: when it returns, the key no longer authenticates.
func (s *KeysService) Revoke(ctx context.Context, id string) (*APIKey, error) {
	return doJSON[APIKey](ctx, s.c, http.MethodPost, "/v1/admin/keys/"+pathEscape(id)+"/revoke", nil, nil, false)
}

// ---------------------------------------------------------------- usage

// UsageService: GET /v1/admin/usage (getUsage).
type UsageService struct{ c *Client }

// UsageParams filters usage; From and To are ISO 8601 times.
type UsageParams struct {
	TeamID string
	KeyID  string
	Model  string
	From   string
	To     string
}

// UsageRow is one (team, key, model, actor) row.
type UsageRow struct {
	TeamID    string  `json:"team_id"`
	KeyID     string  `json:"key_id"`
	Model     string  `json:"model"`
	ActorID   *string `json:"actor_id"`
	Requests  int64   `json:"requests"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	Spend     float64 `json:"spend"`
}

// UsageTotal sums the rows.
type UsageTotal struct {
	Requests  int64   `json:"requests"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	Spend     float64 `json:"spend"`
}

// UsageReport is the answer of Get.
type UsageReport struct {
	Object   string     `json:"object"`
	Currency string     `json:"currency"`
	Data     []UsageRow `json:"data"`
	Total    UsageTotal `json:"total"`
}

// Get reads usage.
func (s *UsageService) Get(ctx context.Context, p *UsageParams) (*UsageReport, error) {
	q := url.Values{}
	if p != nil {
		set := func(k, v string) {
			if v != "" {
				q.Set(k, v)
			}
		}
		set("team_id", p.TeamID)
		set("key_id", p.KeyID)
		set("model", p.Model)
		set("from", p.From)
		set("to", p.To)
	}
	return doJSON[UsageReport](ctx, s.c, http.MethodGet, "/v1/admin/usage", q, nil, true)
}

// ---------------------------------------------------------------- policies

// PoliciesService: /v1/admin/policies (listPolicies, uploadPolicy, activatePolicy).
type PoliciesService struct{ c *Client }

// PolicyVersion is a router version.
type PolicyVersion struct {
	ID              string  `json:"id"`
	Kind            string  `json:"kind"`
	World           string  `json:"world"`
	Pool            string  `json:"pool"`
	Name            *string `json:"name"`
	ComponentSHA256 string  `json:"component_sha256"`
	DocumentSHA256  *string `json:"document_sha256"`
	Status          string  `json:"status"`
	Active          bool    `json:"active"`
	Created         int64   `json:"created"`
	Origin          string  `json:"origin"`
	Error           *string `json:"error"`
}

// PolicyList is the answer of List.
type PolicyList struct {
	Object  string          `json:"object"`
	Active  *string         `json:"active"`
	Breaker json.RawMessage `json:"breaker"`
	Data    []PolicyVersion `json:"data"`
}

// PolicyUpload uploads a router version: a routing `Document` (YAML) alone reuses the active
// component. Activate defaults to true (nil).
type PolicyUpload struct {
	Document        string `json:"document,omitempty"`
	ComponentBase64 string `json:"component_base64,omitempty"`
	Pool            string `json:"pool,omitempty"`
	Activate        *bool  `json:"activate,omitempty"`
}

// List lists the kept versions, oldest first.
func (s *PoliciesService) List(ctx context.Context) (*PolicyList, error) {
	return doJSON[PolicyList](ctx, s.c, http.MethodGet, "/v1/admin/policies", nil, nil, true)
}

// Upload validates and stores a version (activating it unless Activate is false).
func (s *PoliciesService) Upload(ctx context.Context, p PolicyUpload) (*PolicyVersion, error) {
	return doJSON[PolicyVersion](ctx, s.c, http.MethodPost, "/v1/admin/policies", nil, p, false)
}

// Activate makes a loaded version active (also a rollback).
func (s *PoliciesService) Activate(ctx context.Context, id string) (*PolicyVersion, error) {
	return doJSON[PolicyVersion](ctx, s.c, http.MethodPost, "/v1/admin/policies/"+pathEscape(id)+"/activate", nil, nil, true)
}

// ---------------------------------------------------------------- guardrail

// GuardrailService: GET/POST /v1/admin/guardrail (getGuardrail, setGuardrail).
type GuardrailService struct{ c *Client }

// Guardrail is the active guardrail. Settings is the settings document as the gateway gives it.
type Guardrail struct {
	Object          string          `json:"object"`
	World           string          `json:"world"`
	ComponentSHA256 string          `json:"component_sha256"`
	Settings        json.RawMessage `json:"settings"`
}

// GuardrailUpdate replaces the component and/or the settings (a JSON object or its text).
type GuardrailUpdate struct {
	ComponentBase64 string `json:"component_base64,omitempty"`
	Settings        any    `json:"settings,omitempty"`
}

// Get reads the active guardrail.
func (s *GuardrailService) Get(ctx context.Context) (*Guardrail, error) {
	return doJSON[Guardrail](ctx, s.c, http.MethodGet, "/v1/admin/guardrail", nil, nil, true)
}

// Set validates and activates a new guardrail; a bad one is a 400 and changes nothing.
func (s *GuardrailService) Set(ctx context.Context, u GuardrailUpdate) (*Guardrail, error) {
	return doJSON[Guardrail](ctx, s.c, http.MethodPost, "/v1/admin/guardrail", nil, u, true)
}

// doJSON sends a JSON request and decodes the answer (nil on error).
func doJSON[T any](ctx context.Context, c *Client, method, path string, q url.Values, body any, idempotent bool) (*T, error) {
	var out T
	if err := c.json(ctx, method, path, q, body, idempotent, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// json sends a JSON request (body nil: none) and decodes the answer into out.
func (c *Client) json(ctx context.Context, method, path string, q url.Values, body any, idempotent bool, out any) error {
	r, err := jsonRequest(method, path, body, idempotent)
	if err != nil {
		return err
	}
	r.query = q
	_, err = c.call(ctx, r, out)
	return err
}
