package sovereign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultWebhookTolerance is how far a webhook's timestamp may be from now.
const DefaultWebhookTolerance = 5 * time.Minute

// VerifyWebhook checks a webhook request (Standard Webhooks): `webhook-signature` holds
// space-separated `v1,<base64>` signatures, any one of which must be HMAC-SHA256 of
// "{webhook-id}.{webhook-timestamp}.{body}" under the base64-decoded secret (after `whsec_`),
// and `webhook-timestamp` must be within tolerance of now (tolerance 0: 5 minutes; now zero:
// the current time). It returns nil or a *WebhookVerificationError (errors.Is
// ErrWebhookVerification).
func VerifyWebhook(secret string, header http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	if now.IsZero() {
		now = time.Now()
	}
	key, err := webhookKey(secret)
	if err != nil {
		return &WebhookVerificationError{Reason: err.Error()}
	}
	id := headerValue(header, "webhook-id")
	ts := headerValue(header, "webhook-timestamp")
	sigs := headerValue(header, "webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return &WebhookVerificationError{Reason: "missing webhook-id, webhook-timestamp or webhook-signature"}
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
	if err != nil {
		return &WebhookVerificationError{Reason: "webhook-timestamp is not Unix seconds"}
	}
	if math.Abs(float64(now.Unix()-secs)) > tolerance.Seconds() {
		return &WebhookVerificationError{Reason: fmt.Sprintf("timestamp %d is outside the tolerance of %s", secs, tolerance)}
	}
	expected := webhookMAC(key, id, strings.TrimSpace(ts), body)
	for _, entry := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		if hmac.Equal(got, expected) {
			return nil
		}
	}
	return &WebhookVerificationError{Reason: "no signature matches"}
}

// SignWebhook computes the `webhook-signature` value (`v1,<base64>`) for id, timestamp and
// body, as the gateway does (for tests and for receivers' own tooling).
func SignWebhook(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := webhookKey(secret)
	if err != nil {
		return "", err
	}
	mac := webhookMAC(key, id, strconv.FormatInt(timestamp, 10), body)
	return "v1," + base64.StdEncoding.EncodeToString(mac), nil
}

func webhookKey(secret string) ([]byte, error) {
	s := strings.TrimPrefix(strings.TrimSpace(secret), "whsec_")
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("the secret is not whsec_<base64>")
	}
	return key, nil
}

func webhookMAC(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte("."))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// headerValue reads a header whatever the case of the map's keys.
func headerValue(h http.Header, name string) string {
	if vs := h.Values(name); len(vs) > 0 {
		return strings.Join(vs, " ")
	}
	for k, vs := range h {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return strings.Join(vs, " ")
		}
	}
	return ""
}
