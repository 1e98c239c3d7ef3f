package sovereign

// The activity journal as an RFC 9162 transparency log (issue 48): offline verification of
// C2SP tlog-checkpoint notes signed with Ed25519 (C2SP signed-note), of inclusion proofs of
// export lines and of consistency proofs between checkpoints, and the gateway calls that
// fetch them (GET /v1/activity/checkpoint, …/checkpoint/key, …/proof, …/consistency).

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrJournalVerification matches every *JournalVerificationError (errors.Is).
var ErrJournalVerification = errors.New("sovereign: journal verification failed")

// JournalVerificationError: a checkpoint, inclusion proof or consistency proof that does not
// verify. Reason starts with malformed, bad signature, untrusted key, inclusion or consistency.
type JournalVerificationError struct{ Reason string }

func (e *JournalVerificationError) Error() string {
	return "sovereign: journal verification failed: " + e.Reason
}

// Is matches ErrJournalVerification.
func (e *JournalVerificationError) Is(target error) bool { return target == ErrJournalVerification }

func tlogErr(format string, args ...any) error {
	return &JournalVerificationError{Reason: fmt.Sprintf(format, args...)}
}

// MaxNoteSignatures is the most signature lines a checkpoint note may carry.
const MaxNoteSignatures = 16

const (
	tlogHashSize = sha256.Size
	noteSigDash  = "\u2014 " // EM DASH, space
	algEd25519   = 0x01
)

// TreeHead is a checkpoint whose signature verified.
type TreeHead struct {
	Origin   string
	TreeSize int64
	RootHash []byte // 32 bytes
	// Extensions are the note's lines after the root hash (usually none).
	Extensions []string
}

// InclusionProof is GET /v1/activity/proof: the RFC 9162 inclusion proof of one entry
// (hashes base64 in JSON).
type InclusionProof struct {
	LeafIndex int64    `json:"leaf_index"`
	TreeSize  int64    `json:"tree_size"`
	Hashes    [][]byte `json:"hashes"`
}

// ConsistencyProof is GET /v1/activity/consistency: the RFC 9162 consistency proof between
// the trees of From and To leaves (hashes base64 in JSON).
type ConsistencyProof struct {
	From   int64    `json:"from"`
	To     int64    `json:"to"`
	Hashes [][]byte `json:"hashes"`
}

// ---------------------------------------------------------------- RFC 9162 hashing

// LeafHash is the RFC 9162 leaf hash SHA-256(0x00 || leaf).
func LeafHash(leaf []byte) []byte {
	h := sha256.New()
	h.Write([]byte{0x00})
	h.Write(leaf)
	return h.Sum(nil)
}

func nodeHash(left, right []byte) []byte {
	h := sha256.New()
	h.Write([]byte{0x01})
	h.Write(left)
	h.Write(right)
	return h.Sum(nil)
}

func checkHashes(hashes [][]byte) error {
	for i, h := range hashes {
		if len(h) != tlogHashSize {
			return tlogErr("malformed: proof hash %d is %d bytes, not %d", i, len(h), tlogHashSize)
		}
	}
	return nil
}

// RootFromInclusion is the root an inclusion proof leads to (RFC 9162 §2.1.3.2) from the leaf
// hash at index in a tree of size leaves; a *JournalVerificationError when the path cannot be
// one of that leaf in that tree.
func RootFromInclusion(leafHash []byte, index, size int64, hashes [][]byte) ([]byte, error) {
	if len(leafHash) != tlogHashSize {
		return nil, tlogErr("malformed: the leaf hash is %d bytes, not %d", len(leafHash), tlogHashSize)
	}
	if err := checkHashes(hashes); err != nil {
		return nil, err
	}
	if index < 0 || size < 0 {
		return nil, tlogErr("inclusion: negative leaf index or tree size")
	}
	if index >= size {
		return nil, tlogErr("inclusion: leaf index %d is not below the tree size %d", index, size)
	}
	fn, sn := uint64(index), uint64(size-1)
	r := leafHash
	for _, p := range hashes {
		if sn == 0 {
			return nil, tlogErr("inclusion: the proof has %d hashes, too many for leaf %d of %d", len(hashes), index, size)
		}
		if fn&1 == 1 || fn == sn {
			r = nodeHash(p, r)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			r = nodeHash(r, p)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return nil, tlogErr("inclusion: the proof has %d hashes, too few for leaf %d of %d", len(hashes), index, size)
	}
	return r, nil
}

// VerifyConsistencyProof verifies an RFC 9162 consistency proof (§2.1.4.2) between the tree of
// m leaves with root root1 and the tree of n leaves with root root2 (1 <= m <= n; m == n needs
// an empty proof and equal roots). nil or a *JournalVerificationError.
func VerifyConsistencyProof(m, n int64, root1, root2 []byte, hashes [][]byte) error {
	if len(root1) != tlogHashSize || len(root2) != tlogHashSize {
		return tlogErr("malformed: a root hash is not %d bytes", tlogHashSize)
	}
	if err := checkHashes(hashes); err != nil {
		return err
	}
	switch {
	case m < 1:
		return tlogErr("consistency: the first tree size must be at least 1, not %d", m)
	case m > n:
		return tlogErr("consistency: the first tree size %d is above the second %d", m, n)
	case m == n:
		if len(hashes) != 0 {
			return tlogErr("consistency: a proof between equal sizes must be empty, not %d hashes", len(hashes))
		}
		if !bytes.Equal(root1, root2) {
			return tlogErr("consistency: two different roots for tree size %d", m)
		}
		return nil
	case len(hashes) == 0:
		return tlogErr("consistency: an empty proof from size %d to %d", m, n)
	}
	nodes := hashes
	if m&(m-1) == 0 { // m a power of two: the old root is the path's first node
		nodes = append([][]byte{root1}, hashes...)
	}
	fn, sn := uint64(m-1), uint64(n-1)
	for fn&1 == 1 {
		fn >>= 1
		sn >>= 1
	}
	fr, sr := nodes[0], nodes[0]
	for _, c := range nodes[1:] {
		if sn == 0 {
			return tlogErr("consistency: the proof has %d hashes, too many for %d to %d", len(hashes), m, n)
		}
		if fn&1 == 1 || fn == sn {
			fr = nodeHash(c, fr)
			sr = nodeHash(c, sr)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			sr = nodeHash(sr, c)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return tlogErr("consistency: the proof has %d hashes, too few for %d to %d", len(hashes), m, n)
	}
	if !bytes.Equal(fr, root1) {
		return tlogErr("consistency: the proof does not lead to the root of tree size %d", m)
	}
	if !bytes.Equal(sr, root2) {
		return tlogErr("consistency: the proof does not lead to the root of tree size %d", n)
	}
	return nil
}

// ---------------------------------------------------------------- signed notes

type verifierKey struct {
	name string
	id   []byte
	key  ed25519.PublicKey
}

// strictBase64 decodes standard base64 with padding and nothing else.
func strictBase64(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || strings.ContainsAny(s, "\r\n") {
		return nil, false
	}
	return b, true
}

func noteKeyID(name string, algAndKey []byte) []byte {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n'})
	h.Write(algAndKey)
	return h.Sum(nil)[:4]
}

func validKeyName(name string) bool {
	if name == "" || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if r == '+' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func isHexLower8(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseVerifierKey: `<name>+<8 hex key id>+<base64(0x01 || key)>`, a trailing newline allowed.
func parseVerifierKey(vkey string) (*verifierKey, error) {
	vkey = strings.TrimSuffix(vkey, "\n")
	name, rest, ok := strings.Cut(vkey, "+")
	idHex, keyB64, ok2 := strings.Cut(rest, "+")
	if !ok || !ok2 {
		return nil, tlogErr("malformed: the verifier key is not <name>+<key id>+<key>")
	}
	if !validKeyName(name) {
		return nil, tlogErr("malformed: the verifier key has an empty name or one with spaces or \"+\"")
	}
	if !isHexLower8(idHex) {
		return nil, tlogErr("malformed: the verifier key's id is not 8 lowercase hex digits")
	}
	key, ok := strictBase64(keyB64)
	if !ok || len(key) != 1+ed25519.PublicKeySize || key[0] != algEd25519 {
		return nil, tlogErr("malformed: the verifier key is not an Ed25519 key (base64 of 0x01 and 32 bytes)")
	}
	id := noteKeyID(name, key)
	if hex.EncodeToString(id) != idHex {
		return nil, tlogErr("malformed: the verifier key's id %s is not the key's (%s)", idHex, hex.EncodeToString(id))
	}
	return &verifierKey{name: name, id: id, key: ed25519.PublicKey(key[1:])}, nil
}

// isNoteControl: a control character other than newline (C0, DEL, C1).
func isNoteControl(r rune) bool {
	return r != '\n' && unicode.IsControl(r)
}

type noteSig struct {
	name string
	id   []byte
	sig  []byte
}

// VerifyCheckpoint verifies a checkpoint (a C2SP tlog-checkpoint in a signed note) against a
// verifier key (GET /v1/activity/checkpoint/key; a trailing newline is fine): the origin must
// be the key's name and a signature line of that key (name and key id) must verify;
// signature lines of other keys are ignored. Errors are *JournalVerificationError.
func VerifyCheckpoint(note, vkey string) (*TreeHead, error) {
	key, err := parseVerifierKey(vkey)
	if err != nil {
		return nil, err
	}
	if !utf8.ValidString(note) {
		return nil, tlogErr("malformed: the note is not UTF-8")
	}
	if strings.IndexFunc(note, isNoteControl) >= 0 {
		return nil, tlogErr("malformed: the note holds a control character other than newline")
	}
	split := strings.LastIndex(note, "\n\n")
	if split < 0 {
		return nil, tlogErr("malformed: the note has no blank line before its signatures")
	}
	body, sigBlock := note[:split+1], note[split+2:]

	// The checkpoint: origin, size, root hash, then optional non-empty extension lines.
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if len(lines) < 3 {
		return nil, tlogErr("malformed: the checkpoint needs an origin, a tree size and a root hash")
	}
	origin, sizeText, rootText := lines[0], lines[1], lines[2]
	if origin == "" {
		return nil, tlogErr("malformed: the origin line is empty")
	}
	if !isCanonicalDecimal(sizeText) {
		return nil, tlogErr("malformed: the tree size %q is not a decimal without leading zeros", sizeText)
	}
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if err != nil {
		return nil, tlogErr("malformed: the tree size %s is too large", sizeText)
	}
	root, ok := strictBase64(rootText)
	if !ok || len(root) != tlogHashSize {
		return nil, tlogErr("malformed: the root hash is not base64 of 32 bytes")
	}
	extensions := lines[3:]
	for _, e := range extensions {
		if e == "" {
			return nil, tlogErr("malformed: an empty extension line")
		}
	}

	// The signature lines.
	if sigBlock == "" || !strings.HasSuffix(sigBlock, "\n") {
		return nil, tlogErr("malformed: the note has no signature lines ending with a newline")
	}
	sigLines := strings.Split(strings.TrimSuffix(sigBlock, "\n"), "\n")
	if len(sigLines) > MaxNoteSignatures {
		return nil, tlogErr("malformed: %d signature lines, more than %d", len(sigLines), MaxNoteSignatures)
	}
	sigs := make([]noteSig, 0, len(sigLines))
	for i, line := range sigLines {
		if !strings.HasPrefix(line, noteSigDash) {
			return nil, tlogErr("malformed: signature line %d does not start with \"— \"", i+1)
		}
		name, b64, _ := strings.Cut(strings.TrimPrefix(line, noteSigDash), " ")
		raw, ok := strictBase64(b64)
		if !validKeyName(name) || !ok || len(raw) < 5 {
			return nil, tlogErr("malformed: signature line %d is not \"— <name> <base64>\"", i+1)
		}
		sigs = append(sigs, noteSig{name: name, id: raw[:4], sig: raw[4:]})
	}

	if origin != key.name {
		return nil, tlogErr("untrusted key: the checkpoint's origin %q is not the key's name %q", origin, key.name)
	}
	verified := false
	for _, s := range sigs {
		if s.name != key.name || !bytes.Equal(s.id, key.id) {
			continue
		}
		if len(s.sig) != ed25519.SignatureSize || !ed25519.Verify(key.key, []byte(body), s.sig) {
			return nil, tlogErr("bad signature: the signature of %s+%x does not verify", key.name, key.id)
		}
		verified = true
	}
	if !verified {
		return nil, tlogErr("untrusted key: no signature of %s+%x on the checkpoint", key.name, key.id)
	}
	return &TreeHead{Origin: origin, TreeSize: size, RootHash: root, Extensions: append([]string{}, extensions...)}, nil
}

func isCanonicalDecimal(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------- journal proofs

// VerifyInclusion verifies that an export line (a trailing "\n" is stripped) is in the tree a
// checkpoint vouches for: the checkpoint's signature, then proof from the line's leaf hash to
// its root. note is the checkpoint of size proof.TreeSize. It returns the verified checkpoint.
func VerifyInclusion(line []byte, proof InclusionProof, note, vkey string) (*TreeHead, error) {
	head, err := VerifyCheckpoint(note, vkey)
	if err != nil {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	if proof.TreeSize != head.TreeSize {
		return nil, tlogErr("inclusion: the proof is for tree size %d, the checkpoint of size %d", proof.TreeSize, head.TreeSize)
	}
	root, err := RootFromInclusion(LeafHash(line), proof.LeafIndex, proof.TreeSize, proof.Hashes)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(root, head.RootHash) {
		return nil, tlogErr("inclusion: the proof of leaf %d does not lead to the checkpoint's root (tree size %d)", proof.LeafIndex, proof.TreeSize)
	}
	return head, nil
}

// VerifyConsistency verifies that the log of newNote extends the log of oldNote: both
// checkpoints' signatures, then proof between their roots. It returns the two checkpoints.
func VerifyConsistency(oldNote, newNote string, proof ConsistencyProof, vkey string) (older, newer *TreeHead, err error) {
	if older, err = VerifyCheckpoint(oldNote, vkey); err != nil {
		return nil, nil, err
	}
	if newer, err = VerifyCheckpoint(newNote, vkey); err != nil {
		return nil, nil, err
	}
	if proof.From != older.TreeSize {
		return nil, nil, tlogErr("consistency: the proof is from tree size %d, the old checkpoint of size %d", proof.From, older.TreeSize)
	}
	if proof.To != newer.TreeSize {
		return nil, nil, tlogErr("consistency: the proof is to tree size %d, the new checkpoint of size %d", proof.To, newer.TreeSize)
	}
	if err := VerifyConsistencyProof(proof.From, proof.To, older.RootHash, newer.RootHash, proof.Hashes); err != nil {
		return nil, nil, err
	}
	return older, newer, nil
}

// ---------------------------------------------------------------- gateway calls

// TlogOption adjusts Checkpoint and InclusionProof.
type TlogOption func(url.Values)

// AtTreeSize asks InclusionProof for the proof in the tree of n leaves (default: the latest
// checkpoint's size).
func AtTreeSize(n int64) TlogOption {
	return func(q url.Values) { q.Set("tree_size", strconv.FormatInt(n, 10)) }
}

// ForReplica asks Checkpoint for another replica's log (multi-replica deployments).
func ForReplica(sovereignID string) TlogOption {
	return func(q url.Values) { q.Set("replica", sovereignID) }
}

func (s *ActivityService) text(ctx context.Context, path string, q url.Values) (string, error) {
	r := &request{method: http.MethodGet, path: path, query: q, idempotent: true,
		header: http.Header{"Accept": {"text/plain, */*"}}}
	resp, err := s.c.do(ctx, r)
	if err != nil {
		return "", err
	}
	return string(resp.body), nil
}

// Checkpoint returns the journal's signed checkpoint as it stands (GET /v1/activity/checkpoint):
// a C2SP tlog-checkpoint note, to verify with VerifyCheckpoint. Admin and auditor keys.
func (s *ActivityService) Checkpoint(ctx context.Context, opts ...TlogOption) (string, error) {
	q := url.Values{}
	for _, o := range opts {
		o(q)
	}
	return s.text(ctx, "/v1/activity/checkpoint", q)
}

// CheckpointKey returns the checkpoints' verifier key, `<name>+<key id>+<base64 key>`, without
// its newline (GET /v1/activity/checkpoint/key).
func (s *ActivityService) CheckpointKey(ctx context.Context) (string, error) {
	k, err := s.text(ctx, "/v1/activity/checkpoint/key", nil)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSuffix(k, "\n"), "\r"), nil
}

// InclusionProof returns the inclusion proof of request requestID's entry
// (GET /v1/activity/proof), in the tree of the latest checkpoint unless AtTreeSize says.
func (s *ActivityService) InclusionProof(ctx context.Context, requestID string, opts ...TlogOption) (*InclusionProof, error) {
	q := url.Values{"request_id": {requestID}}
	for _, o := range opts {
		o(q)
	}
	var out InclusionProof
	if _, err := s.c.call(ctx, &request{method: http.MethodGet, path: "/v1/activity/proof", query: q, idempotent: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ConsistencyProof returns the consistency proof between the trees of from and to leaves
// (GET /v1/activity/consistency; 1 <= from <= to).
func (s *ActivityService) ConsistencyProof(ctx context.Context, from, to int64) (*ConsistencyProof, error) {
	q := url.Values{"from": {strconv.FormatInt(from, 10)}, "to": {strconv.FormatInt(to, 10)}}
	var out ConsistencyProof
	if _, err := s.c.call(ctx, &request{method: http.MethodGet, path: "/v1/activity/consistency", query: q, idempotent: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
