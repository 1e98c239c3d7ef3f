package sovereign

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// GenesisHash is the prev_hash of a chain's first entry.
const GenesisHash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// ---------------------------------------------------------------- JCS (RFC 8785)

// CanonicalJSON encodes v as RFC 8785 (JCS) for the values journal entries and checkpoints
// hold: objects (map[string]any), arrays, strings, integers (json.Number or Go integer types),
// booleans and null. Floats other than integral json.Numbers are refused. Unlike
// encoding/json it escapes only `"`, `\` and control characters, writes non-ASCII as raw
// UTF-8 and sorts keys by UTF-16 code units.
func CanonicalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeJCS(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeJCS(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		return writeJCSString(b, x)
	case json.Number:
		s, err := canonicalInteger(string(x))
		if err != nil {
			return err
		}
		b.WriteString(s)
	case int:
		fmt.Fprintf(b, "%d", x)
	case int64:
		fmt.Fprintf(b, "%d", x)
	case int32:
		fmt.Fprintf(b, "%d", x)
	case uint64:
		fmt.Fprintf(b, "%d", x)
	case uint32:
		fmt.Fprintf(b, "%d", x)
	case float64:
		if x != float64(int64(x)) || x > 1<<53 || x < -(1<<53) {
			return fmt.Errorf("jcs: non-integer number %v", x)
		}
		fmt.Fprintf(b, "%d", int64(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJCS(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return utf16Less(keys[i], keys[j]) })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJCSString(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := writeJCS(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("jcs: unsupported value of type %T", v)
	}
	return nil
}

// canonicalInteger: a JSON number that is an integer, in plain decimal (1.0, 1e2 refused:
// entries hold integers only, written plainly).
func canonicalInteger(s string) (string, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return "", fmt.Errorf("jcs: %q is not an integer", s)
	}
	return n.String(), nil
}

const hexdigits = "0123456789abcdef"

func writeJCSString(b *bytes.Buffer, s string) error {
	if !utf8.ValidString(s) {
		return errors.New("jcs: string is not valid UTF-8")
	}
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hexdigits[c>>4])
				b.WriteByte(hexdigits[c&0xf])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return nil
}

func utf16Less(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// decodeObject parses one JSON object, numbers kept as json.Number; trailing data refused.
func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return m, nil
}

// EntryHash is `"sha256:" + hex(SHA-256(prev_hash ++ JCS(entry without journal_hash)))` of a
// decoded entry (numbers as json.Number).
func EntryHash(entry map[string]any) (string, error) {
	rest := make(map[string]any, len(entry))
	for k, v := range entry {
		if k != "journal_hash" {
			rest[k] = v
		}
	}
	prev, _ := rest["prev_hash"].(string)
	canon, err := CanonicalJSON(rest)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(canon)
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// ---------------------------------------------------------------- offline verification

// VerifyProblem is where and why verification failed. Line is the export line (from 1; 0 when
// the problem is a checkpoint's own); Checkpoint is the checkpoint's index (from 1) when one
// is involved. Reason starts with malformed, edited, broken link, reordered, bad signature,
// untrusted key, rewritten or truncated.
type VerifyProblem struct {
	Line       int    `json:"line"`
	Seq        int64  `json:"seq"`
	Reason     string `json:"reason"`
	Checkpoint int    `json:"checkpoint,omitempty"`
}

// VerifyResult is the outcome of VerifyJournalExport.
type VerifyResult struct {
	OK                 bool           `json:"ok"`
	Entries            int            `json:"entries"`
	FirstSeq           int64          `json:"first_seq"`
	HeadSeq            int64          `json:"head_seq"`
	HeadHash           string         `json:"head_hash"`
	Gaps               int            `json:"gaps"`
	CheckpointsChecked int            `json:"checkpoints_checked"`
	Problem            *VerifyProblem `json:"problem,omitempty"`
}

// VerifyOption adjusts VerifyJournalExport.
type VerifyOption func(*verifyConfig)

type verifyConfig struct{ sovereignID string }

// VerifySovereignID uses only the checkpoints of this chain (the X-Sovereign-ID of the
// gateway that exported it). Without it every checkpoint given is used.
func VerifySovereignID(id string) VerifyOption {
	return func(c *verifyConfig) { c.sovereignID = id }
}

// VerifyJournalExport verifies a `jsonl` export (POST /v1/activity/logs {"format":"jsonl"})
// offline: every entry's hash, the links between consecutive seqs, and the signed checkpoints
// (signature, pinned key when publicKey is not "", head hash; a checkpoint past the end of a
// whole export means truncation). publicKey is `ed25519:<64 hex>` (the operator's
// `<signing_key>.pub`). An error only when export cannot be read.
func VerifyJournalExport(export io.Reader, checkpoints []Checkpoint, publicKey string, opts ...VerifyOption) (*VerifyResult, error) {
	var lines [][]byte
	r := bufio.NewReaderSize(export, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			lines = append(lines, bytes.TrimSuffix(line, []byte("\n")))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return VerifyJournalLines(lines, checkpoints, publicKey, opts...), nil
}

// VerifyJournalLines is VerifyJournalExport over lines already split (without their "\n").
func VerifyJournalLines(lines [][]byte, checkpoints []Checkpoint, publicKey string, opts ...VerifyOption) *VerifyResult {
	cfg := verifyConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	res := &VerifyResult{OK: true}
	fail := func(line int, seq int64, cp int, reason string) *VerifyResult {
		res.OK = false
		res.Problem = &VerifyProblem{Line: line, Seq: seq, Reason: reason, Checkpoint: cp}
		return res
	}
	type seen struct {
		hash string
		line int
	}
	bySeq := map[int64]seen{}
	var prevSeq int64
	var prevHash string
	for i, raw := range lines {
		lineNo := i + 1
		entry, err := decodeObject(raw)
		if err != nil {
			return fail(lineNo, 0, 0, "malformed entry: "+err.Error())
		}
		seq, seqOK := integerField(entry, "seq")
		claimed, ok := entry["journal_hash"].(string)
		if !ok {
			return fail(lineNo, seq, 0, "malformed entry: no string journal_hash")
		}
		if !seqOK || seq < 1 {
			return fail(lineNo, seq, 0, "malformed entry: seq is not a positive integer")
		}
		prev, ok := entry["prev_hash"].(string)
		if !ok {
			return fail(lineNo, seq, 0, "malformed entry: no string prev_hash")
		}
		computed, err := EntryHash(entry)
		if err != nil {
			return fail(lineNo, seq, 0, "malformed entry: "+err.Error())
		}
		if computed != claimed {
			return fail(lineNo, seq, 0, "edited: journal_hash does not match the entry")
		}
		if i == 0 {
			res.FirstSeq = seq
			if seq == 1 && prev != GenesisHash {
				return fail(lineNo, seq, 0, "broken link: the first entry's prev_hash is not the genesis hash")
			}
		} else {
			switch {
			case seq <= prevSeq:
				return fail(lineNo, seq, 0, fmt.Sprintf("reordered: seq %d after seq %d", seq, prevSeq))
			case seq == prevSeq+1 && prev != prevHash:
				return fail(lineNo, seq, 0, "broken link: prev_hash is not the previous entry's journal_hash")
			case seq > prevSeq+1:
				res.Gaps++
			}
		}
		bySeq[seq] = seen{claimed, lineNo}
		prevSeq, prevHash = seq, claimed
		res.Entries++
		res.HeadSeq, res.HeadHash = seq, claimed
	}

	pinned := ""
	if strings.TrimSpace(publicKey) != "" {
		pinned = normalizeKey(publicKey)
	}
	whole := res.Entries > 0 && res.FirstSeq == 1 && res.Gaps == 0
	for k, cp := range checkpoints {
		idx := k + 1
		obj, err := checkpointObject(cp)
		if err != nil {
			return fail(0, cp.Seq, idx, "bad signature: malformed checkpoint: "+err.Error())
		}
		if cfg.sovereignID != "" {
			if id, _ := obj["sovereign_id"].(string); id != cfg.sovereignID {
				continue
			}
		}
		seq, _ := integerField(obj, "seq")
		if reason := checkSignature(obj); reason != "" {
			return fail(0, seq, idx, reason)
		}
		key, _ := obj["public_key"].(string)
		if pinned != "" && normalizeKey(key) != pinned {
			return fail(0, seq, idx, "untrusted key: the checkpoint is signed by "+key+", not by the pinned key")
		}
		head, _ := obj["head_hash"].(string)
		if e, ok := bySeq[seq]; ok {
			if e.hash != head {
				return fail(e.line, seq, idx, "rewritten: the entry's journal_hash differs from the signed checkpoint's head_hash")
			}
			res.CheckpointsChecked++
		} else if whole && seq > res.HeadSeq {
			return fail(0, seq, idx, fmt.Sprintf("truncated: the export ends at seq %d, but a signed checkpoint vouches for seq %d", res.HeadSeq, seq))
		}
	}
	return res
}

func integerField(m map[string]any, k string) (int64, bool) {
	n, ok := m[k].(json.Number)
	if !ok {
		return 0, false
	}
	v, err := n.Int64()
	if err != nil {
		return 0, false
	}
	return v, true
}

func normalizeKey(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	if !strings.HasPrefix(k, "ed25519:") {
		k = "ed25519:" + k
	}
	return k
}

// checkpointObject is the checkpoint as an object (numbers as json.Number): its raw JSON when
// it was decoded, else its typed fields.
func checkpointObject(cp Checkpoint) (map[string]any, error) {
	raw := []byte(cp.Raw)
	if len(raw) == 0 {
		type plain Checkpoint
		b, err := json.Marshal(plain(cp))
		if err != nil {
			return nil, err
		}
		raw = b
	}
	return decodeObject(raw)
}

// checkSignature: "" when the checkpoint's signature verifies with its own public key.
func checkSignature(obj map[string]any) string {
	sig, _ := obj["signature"].(string)
	key, _ := obj["public_key"].(string)
	pub, err := decodeHexPrefixed(key, "ed25519:", ed25519.PublicKeySize)
	if err != nil {
		return "bad signature: public_key " + err.Error()
	}
	sigBytes, err := decodeHexPrefixed(sig, "ed25519:", ed25519.SignatureSize)
	if err != nil {
		return "bad signature: signature " + err.Error()
	}
	rest := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "signature" {
			rest[k] = v
		}
	}
	msg, err := CanonicalJSON(rest)
	if err != nil {
		return "bad signature: " + err.Error()
	}
	if !ed25519.Verify(ed25519.PublicKey(pub), msg, sigBytes) {
		return "bad signature: the signature does not verify with the checkpoint's public_key"
	}
	return ""
}

func decodeHexPrefixed(v, prefix string, size int) ([]byte, error) {
	if !strings.HasPrefix(v, prefix) {
		return nil, fmt.Errorf("does not start with %q", prefix)
	}
	b, err := hex.DecodeString(v[len(prefix):])
	if err != nil {
		return nil, errors.New("is not hex")
	}
	if len(b) != size {
		return nil, fmt.Errorf("is %d bytes, not %d", len(b), size)
	}
	return b, nil
}

// ParseCheckpoints reads signed checkpoints, one JSON object per line (a
// `checkpoints-<id>.jsonl` file); blank lines are skipped.
func ParseCheckpoints(r io.Reader) ([]Checkpoint, error) {
	var out []Checkpoint
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var cp Checkpoint
		if err := json.Unmarshal(line, &cp); err != nil {
			return nil, fmt.Errorf("checkpoint line %d: %w", n, err)
		}
		out = append(out, cp)
	}
	return out, sc.Err()
}
