package sovereign_test

// The transparency-log verifiers (issue 48) against the shared vectors
// ../../tests/vectors/tlog.json, and against trees and notes built here (an independent
// RFC 9162 reference and a fresh key).

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	sovereign "github.com/sovereign-gateway/sovereign-go"
)

const tlogVectors = "../../tests/vectors/tlog.json"

var tlogPrefixes = []string{"malformed", "bad signature", "untrusted key", "inclusion", "consistency"}

type vecTree struct {
	LeavesHex []string `json:"leaves_hex"`
	Roots     []struct {
		TreeSize int64  `json:"tree_size"`
		RootHash string `json:"root_hash"`
	} `json:"roots"`
	Inclusion []struct {
		LeafIndex int64    `json:"leaf_index"`
		TreeSize  int64    `json:"tree_size"`
		Hashes    []string `json:"hashes"`
	} `json:"inclusion"`
	Consistency []struct {
		From   int64    `json:"from"`
		To     int64    `json:"to"`
		Hashes []string `json:"hashes"`
	} `json:"consistency"`
}

type tlogVectorFile struct {
	RFC9162      vecTree `json:"rfc9162"`
	Generated    vecTree `json:"generated"`
	BadInclusion []struct {
		LeafHex   string   `json:"leaf_hex"`
		LeafIndex int64    `json:"leaf_index"`
		TreeSize  int64    `json:"tree_size"`
		RootHash  string   `json:"root_hash"`
		Hashes    []string `json:"hashes"`
		Why       string   `json:"why"`
	} `json:"bad_inclusion"`
	BadConsistency []struct {
		From   int64    `json:"from"`
		To     int64    `json:"to"`
		Root1  string   `json:"root1"`
		Root2  string   `json:"root2"`
		Hashes []string `json:"hashes"`
		Why    string   `json:"why"`
	} `json:"bad_consistency"`
	Notes struct {
		Valid []struct {
			VKey     string `json:"vkey"`
			Note     string `json:"note"`
			Origin   string `json:"origin"`
			TreeSize int64  `json:"tree_size"`
			RootHash string `json:"root_hash"`
		} `json:"valid"`
		Invalid []struct {
			VKey string `json:"vkey"`
			Note string `json:"note"`
			Why  string `json:"why"`
		} `json:"invalid"`
	} `json:"notes"`
	Journal struct {
		VKey        string   `json:"vkey"`
		Lines       []string `json:"lines"`
		Checkpoints []struct {
			TreeSize int64  `json:"tree_size"`
			Note     string `json:"note"`
		} `json:"checkpoints"`
		Inclusion []struct {
			LeafIndex int64    `json:"leaf_index"`
			TreeSize  int64    `json:"tree_size"`
			Hashes    []string `json:"hashes"`
		} `json:"inclusion"`
		Consistency []struct {
			From   int64    `json:"from"`
			To     int64    `json:"to"`
			Hashes []string `json:"hashes"`
		} `json:"consistency"`
		Bad []map[string]json.RawMessage `json:"bad"`
	} `json:"journal"`
}

// loadTlogVectors fails (never skips) when the shared vectors are missing.
func loadTlogVectors(t *testing.T) *tlogVectorFile {
	t.Helper()
	data, err := os.ReadFile(tlogVectors)
	if err != nil {
		t.Fatalf("the shared vectors: %v", err)
	}
	var v tlogVectorFile
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", tlogVectors, err)
	}
	return &v
}

// b64s decodes base64 hashes; one that is not base64 is a malformed proof.
func b64s(hashes []string) ([][]byte, error) {
	out := make([][]byte, len(hashes))
	for i, h := range hashes {
		b, err := base64.StdEncoding.DecodeString(h)
		if err != nil {
			return nil, &sovereign.JournalVerificationError{Reason: fmt.Sprintf("malformed: hash %d is not base64", i)}
		}
		out[i] = b
	}
	return out, nil
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("base64 %q: %v", s, err)
	}
	return b
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

// expectedPrefix: the reason prefix a bad vector's why starts with ("<prefix>: …"); a why
// without one fails the test.
func expectedPrefix(t *testing.T, why string) string {
	t.Helper()
	for _, p := range tlogPrefixes {
		if strings.HasPrefix(why, p+":") {
			return p
		}
	}
	t.Errorf("the vector's why %q starts with none of %v", why, tlogPrefixes)
	return "(no prefix)"
}

// assertVerifyFails: err is a *JournalVerificationError whose reason starts with prefix (with
// one of the prefixes when prefix is "").
func assertVerifyFails(t *testing.T, err error, prefix, label string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: verified, but must fail with %q", label, prefix)
		return
	}
	var jerr *sovereign.JournalVerificationError
	if !errors.As(err, &jerr) || !errors.Is(err, sovereign.ErrJournalVerification) {
		t.Errorf("%s: %T %v, not a *JournalVerificationError", label, err, err)
		return
	}
	if prefix != "" {
		if !strings.HasPrefix(jerr.Reason, prefix) {
			t.Errorf("%s: reason %q does not start with %q", label, jerr.Reason, prefix)
		}
		return
	}
	for _, p := range tlogPrefixes {
		if strings.HasPrefix(jerr.Reason, p) {
			return
		}
	}
	t.Errorf("%s: reason %q starts with none of %v", label, jerr.Reason, tlogPrefixes)
}

func TestTlogVectorTrees(t *testing.T) {
	v := loadTlogVectors(t)
	for name, tree := range map[string]vecTree{"rfc9162": v.RFC9162, "generated": v.Generated} {
		tree := tree
		t.Run(name, func(t *testing.T) {
			leaves := make([][]byte, len(tree.LeavesHex))
			for i, h := range tree.LeavesHex {
				leaves[i] = mustHex(t, h)
			}
			roots := map[int64][]byte{}
			for _, r := range tree.Roots {
				roots[r.TreeSize] = mustB64(t, r.RootHash)
				if got := refMTH(leaves[:r.TreeSize]); !bytes.Equal(got, roots[r.TreeSize]) {
					t.Errorf("root of size %d: the reference tree has %x", r.TreeSize, got)
				}
			}
			if len(tree.Inclusion) == 0 || len(tree.Consistency) == 0 {
				t.Fatal("no inclusion or consistency vectors")
			}
			for _, p := range tree.Inclusion {
				hashes, err := b64s(p.Hashes)
				if err != nil {
					t.Fatal(err)
				}
				root, err := sovereign.RootFromInclusion(sovereign.LeafHash(leaves[p.LeafIndex]), p.LeafIndex, p.TreeSize, hashes)
				if err != nil {
					t.Errorf("leaf %d of %d: %v", p.LeafIndex, p.TreeSize, err)
					continue
				}
				if want, ok := roots[p.TreeSize]; !ok || !bytes.Equal(root, want) {
					t.Errorf("leaf %d of %d: root %x, want %x", p.LeafIndex, p.TreeSize, root, want)
				}
			}
			for _, p := range tree.Consistency {
				hashes, err := b64s(p.Hashes)
				if err != nil {
					t.Fatal(err)
				}
				if err := sovereign.VerifyConsistencyProof(p.From, p.To, roots[p.From], roots[p.To], hashes); err != nil {
					t.Errorf("%d → %d: %v", p.From, p.To, err)
				}
				if p.From < p.To {
					hashes[len(hashes)-1] = append([]byte(nil), hashes[len(hashes)-1]...)
					hashes[len(hashes)-1][31] ^= 0x80
					err := sovereign.VerifyConsistencyProof(p.From, p.To, roots[p.From], roots[p.To], hashes)
					assertVerifyFails(t, err, "consistency", fmt.Sprintf("%d → %d, a hash changed", p.From, p.To))
				}
			}
		})
	}
}

func TestTlogVectorBadProofs(t *testing.T) {
	v := loadTlogVectors(t)
	if len(v.BadInclusion) == 0 || len(v.BadConsistency) == 0 {
		t.Fatal("no bad proofs in the vectors")
	}
	for _, c := range v.BadInclusion {
		err := func() error {
			hashes, err := b64s(c.Hashes)
			if err != nil {
				return err
			}
			root, err := sovereign.RootFromInclusion(sovereign.LeafHash(mustHex(t, c.LeafHex)), c.LeafIndex, c.TreeSize, hashes)
			if err != nil {
				return err
			}
			if !bytes.Equal(root, mustB64(t, c.RootHash)) {
				return &sovereign.JournalVerificationError{Reason: "inclusion: the proof does not lead to the root"}
			}
			return nil
		}()
		assertVerifyFails(t, err, expectedPrefix(t, c.Why), "bad inclusion ("+c.Why+")")
	}
	for _, c := range v.BadConsistency {
		err := func() error {
			hashes, err := b64s(c.Hashes)
			if err != nil {
				return err
			}
			r1, e1 := base64.StdEncoding.DecodeString(c.Root1)
			r2, e2 := base64.StdEncoding.DecodeString(c.Root2)
			if e1 != nil || e2 != nil {
				return &sovereign.JournalVerificationError{Reason: "malformed: a root is not base64"}
			}
			return sovereign.VerifyConsistencyProof(c.From, c.To, r1, r2, hashes)
		}()
		assertVerifyFails(t, err, expectedPrefix(t, c.Why), "bad consistency ("+c.Why+")")
	}
}

func TestTlogVectorNotes(t *testing.T) {
	v := loadTlogVectors(t)
	if len(v.Notes.Valid) == 0 || len(v.Notes.Invalid) == 0 {
		t.Fatal("no notes in the vectors")
	}
	for i, c := range v.Notes.Valid {
		head, err := sovereign.VerifyCheckpoint(c.Note, c.VKey)
		if err != nil {
			t.Errorf("valid note %d: %v", i, err)
			continue
		}
		if head.Origin != c.Origin || head.TreeSize != c.TreeSize || base64.StdEncoding.EncodeToString(head.RootHash) != c.RootHash {
			t.Errorf("valid note %d: %+v", i, head)
		}
		if _, err := sovereign.VerifyCheckpoint(c.Note, c.VKey+"\n"); err != nil {
			t.Errorf("valid note %d, the key with its newline: %v", i, err)
		}
	}
	for _, c := range v.Notes.Invalid {
		_, err := sovereign.VerifyCheckpoint(c.Note, c.VKey)
		assertVerifyFails(t, err, expectedPrefix(t, c.Why), "invalid note ("+c.Why+")")
	}
}

func TestTlogVectorJournal(t *testing.T) {
	v := loadTlogVectors(t)
	j := v.Journal
	notes := map[int64]string{}
	for _, c := range j.Checkpoints {
		notes[c.TreeSize] = c.Note
		head, err := sovereign.VerifyCheckpoint(c.Note, j.VKey)
		if err != nil {
			t.Fatalf("checkpoint of size %d: %v", c.TreeSize, err)
		}
		leaves := make([][]byte, c.TreeSize)
		for i := range leaves {
			leaves[i] = []byte(j.Lines[i])
		}
		if head.TreeSize != c.TreeSize || !bytes.Equal(head.RootHash, refMTH(leaves)) {
			t.Errorf("checkpoint of size %d: %+v is not the tree of the first lines", c.TreeSize, head)
		}
	}
	if len(j.Checkpoints) == 0 || len(j.Inclusion) == 0 || len(j.Consistency) == 0 || len(j.Bad) == 0 {
		t.Fatal("the journal vectors are incomplete")
	}
	for _, p := range j.Inclusion {
		hashes, err := b64s(p.Hashes)
		if err != nil {
			t.Fatal(err)
		}
		proof := sovereign.InclusionProof{LeafIndex: p.LeafIndex, TreeSize: p.TreeSize, Hashes: hashes}
		for _, line := range [][]byte{[]byte(j.Lines[p.LeafIndex]), []byte(j.Lines[p.LeafIndex] + "\n")} {
			if _, err := sovereign.VerifyInclusion(line, proof, notes[p.TreeSize], j.VKey); err != nil {
				t.Errorf("leaf %d of %d: %v", p.LeafIndex, p.TreeSize, err)
			}
		}
	}
	for _, p := range j.Consistency {
		hashes, err := b64s(p.Hashes)
		if err != nil {
			t.Fatal(err)
		}
		older, newer, err := sovereign.VerifyConsistency(notes[p.From], notes[p.To], sovereign.ConsistencyProof{From: p.From, To: p.To, Hashes: hashes}, j.VKey)
		if err != nil {
			t.Errorf("%d → %d: %v", p.From, p.To, err)
		} else if older.TreeSize != p.From || newer.TreeSize != p.To {
			t.Errorf("%d → %d: %+v %+v", p.From, p.To, older, newer)
		}
	}
	for i, c := range j.Bad {
		var kind, why string
		_ = json.Unmarshal(c["kind"], &kind)
		_ = json.Unmarshal(c["why"], &why)
		label := fmt.Sprintf("journal bad %d %s (%s)", i, kind, why)
		// The case's fields, at the top level or in a "proof" object.
		str := func(k string) (string, bool) {
			var s string
			raw, ok := c[k]
			return s, ok && json.Unmarshal(raw, &s) == nil
		}
		var fields map[string]json.RawMessage = c
		if raw, ok := c["proof"]; ok {
			if err := json.Unmarshal(raw, &fields); err != nil {
				t.Fatalf("%s: proof: %v", label, err)
			}
		}
		num := func(k string) int64 {
			var n int64
			_ = json.Unmarshal(fields[k], &n)
			return n
		}
		var hashStrs []string
		_ = json.Unmarshal(fields["hashes"], &hashStrs)
		vkey := j.VKey
		if s, ok := str("vkey"); ok {
			vkey = s
		}
		var err error
		switch kind {
		case "inclusion":
			idx, size := num("leaf_index"), num("tree_size")
			line := ""
			if idx >= 0 && idx < int64(len(j.Lines)) {
				line = j.Lines[idx]
			}
			if s, ok := str("line"); ok {
				line = s
			}
			note := notes[size]
			if s, ok := str("note"); ok {
				note = s
			}
			var hashes [][]byte
			if hashes, err = b64s(hashStrs); err == nil {
				_, err = sovereign.VerifyInclusion([]byte(line), sovereign.InclusionProof{LeafIndex: idx, TreeSize: size, Hashes: hashes}, note, vkey)
			}
		case "consistency":
			from, to := num("from"), num("to")
			oldNote, newNote := notes[from], notes[to]
			if s, ok := str("old_note"); ok {
				oldNote = s
			}
			if s, ok := str("new_note"); ok {
				newNote = s
			}
			var hashes [][]byte
			if hashes, err = b64s(hashStrs); err == nil {
				_, _, err = sovereign.VerifyConsistency(oldNote, newNote, sovereign.ConsistencyProof{From: from, To: to, Hashes: hashes}, vkey)
			}
		default:
			t.Errorf("%s: unknown kind", label)
			continue
		}
		assertVerifyFails(t, err, expectedPrefix(t, why), label)
	}
}

// ---------------------------------------------------------------- built here

func refSHA(parts ...[]byte) []byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

func refSplit(n int) int {
	k := 1
	for k*2 < n {
		k *= 2
	}
	return k
}

func refMTH(d [][]byte) []byte {
	switch len(d) {
	case 0:
		return refSHA()
	case 1:
		return refSHA([]byte{0}, d[0])
	}
	k := refSplit(len(d))
	return refSHA([]byte{1}, refMTH(d[:k]), refMTH(d[k:]))
}

func refPath(m int, d [][]byte) [][]byte {
	if len(d) <= 1 {
		return nil
	}
	k := refSplit(len(d))
	if m < k {
		return append(refPath(m, d[:k]), refMTH(d[k:]))
	}
	return append(refPath(m-k, d[k:]), refMTH(d[:k]))
}

func refProof(m int, d [][]byte) [][]byte {
	var sub func(m int, d [][]byte, b bool) [][]byte
	sub = func(m int, d [][]byte, b bool) [][]byte {
		if m == len(d) {
			if b {
				return nil
			}
			return [][]byte{refMTH(d)}
		}
		k := refSplit(len(d))
		if m <= k {
			return append(sub(m, d[:k], b), refMTH(d[k:]))
		}
		return append(sub(m-k, d[k:], false), refMTH(d[:k]))
	}
	return sub(m, d, true)
}

type testSigner struct {
	name string
	id   []byte
	vkey string
	priv ed25519.PrivateKey
}

func newSigner(t *testing.T, name string) *testSigner {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	algKey := append([]byte{1}, pub...)
	id := refSHA([]byte(name+"\n"), algKey)[:4]
	return &testSigner{name: name, id: id, priv: priv,
		vkey: fmt.Sprintf("%s+%x+%s", name, id, base64.StdEncoding.EncodeToString(algKey))}
}

func (s *testSigner) sigLine(text string) string {
	return "\u2014 " + s.name + " " + base64.StdEncoding.EncodeToString(append(append([]byte{}, s.id...), ed25519.Sign(s.priv, []byte(text))...)) + "\n"
}

func (s *testSigner) note(size any, root []byte, extra string) string {
	text := fmt.Sprintf("%s\n%v\n%s\n%s", s.name, size, base64.StdEncoding.EncodeToString(root), extra)
	return text + "\n" + s.sigLine(text)
}

func TestTlogBuiltHere(t *testing.T) {
	s := newSigner(t, "sovereign-gateway/journal/test-1")
	var leaves [][]byte
	for i := 0; i < 21; i++ {
		leaves = append(leaves, []byte(fmt.Sprintf(`{"seq":%d,"x":"é"}`, i+1)))
	}
	for n := 1; n <= len(leaves); n++ {
		note := s.note(n, refMTH(leaves[:n]), "")
		for i := 0; i < n; i++ {
			p := sovereign.InclusionProof{LeafIndex: int64(i), TreeSize: int64(n), Hashes: refPath(i, leaves[:n])}
			if _, err := sovereign.VerifyInclusion(leaves[i], p, note, s.vkey); err != nil {
				t.Fatalf("leaf %d of %d: %v", i, n, err)
			}
			if n > 1 {
				_, err := sovereign.VerifyInclusion(leaves[(i+1)%n], p, note, s.vkey)
				assertVerifyFails(t, err, "inclusion", fmt.Sprintf("another line, %d of %d", i, n))
			}
		}
		for m := 1; m <= n; m++ {
			p := sovereign.ConsistencyProof{From: int64(m), To: int64(n), Hashes: refProof(m, leaves[:n])}
			if _, _, err := sovereign.VerifyConsistency(s.note(m, refMTH(leaves[:m]), ""), note, p, s.vkey); err != nil {
				t.Fatalf("%d → %d: %v", m, n, err)
			}
		}
	}

	// A forked log, a truncated proof, swapped checkpoints, m = 0, m = n.
	forked := append(append([][]byte{}, leaves[:10]...), []byte("forged"))
	p := sovereign.ConsistencyProof{From: 7, To: 11, Hashes: refProof(7, forked)}
	oldNote := s.note(7, refMTH(leaves[:7]), "")
	if _, _, err := sovereign.VerifyConsistency(oldNote, s.note(11, refMTH(forked), ""), p, s.vkey); err != nil {
		t.Fatal(err)
	}
	_, _, err := sovereign.VerifyConsistency(oldNote, s.note(11, refMTH(leaves[:11]), ""), p, s.vkey)
	assertVerifyFails(t, err, "consistency", "fork")
	short := sovereign.ConsistencyProof{From: 7, To: 11, Hashes: p.Hashes[:len(p.Hashes)-1]}
	_, _, err = sovereign.VerifyConsistency(oldNote, s.note(11, refMTH(forked), ""), short, s.vkey)
	assertVerifyFails(t, err, "consistency", "truncated")
	_, _, err = sovereign.VerifyConsistency(s.note(11, refMTH(forked), ""), oldNote, p, s.vkey)
	assertVerifyFails(t, err, "consistency", "swapped")
	assertVerifyFails(t, sovereign.VerifyConsistencyProof(0, 3, refMTH(nil), refMTH(leaves[:3]), nil), "consistency", "m = 0")
	same := refMTH(leaves[:5])
	if err := sovereign.VerifyConsistencyProof(5, 5, same, same, nil); err != nil {
		t.Fatal(err)
	}
	assertVerifyFails(t, sovereign.VerifyConsistencyProof(5, 5, same, refMTH(leaves[:4]), nil), "consistency", "m = n, two roots")
	assertVerifyFails(t, sovereign.VerifyConsistencyProof(5, 5, same, same, [][]byte{same}), "consistency", "m = n, a hash")

	// Inclusion: wrong size, index past the end, path lengths, a short hash.
	path := refPath(2, leaves[:6])
	lh := sovereign.LeafHash(leaves[2])
	_, err = sovereign.VerifyInclusion(leaves[2], sovereign.InclusionProof{LeafIndex: 2, TreeSize: 7, Hashes: path}, s.note(6, refMTH(leaves[:6]), ""), s.vkey)
	assertVerifyFails(t, err, "inclusion", "size")
	_, err = sovereign.RootFromInclusion(lh, 6, 6, path)
	assertVerifyFails(t, err, "inclusion", "index")
	_, err = sovereign.RootFromInclusion(lh, 2, 6, append(append([][]byte{}, path...), path[0]))
	assertVerifyFails(t, err, "inclusion", "one too many")
	_, err = sovereign.RootFromInclusion(lh, 2, 6, path[1:])
	assertVerifyFails(t, err, "inclusion", "one too few")
	_, err = sovereign.RootFromInclusion(lh, 2, 6, append([][]byte{make([]byte, 31)}, path[1:]...))
	assertVerifyFails(t, err, "malformed", "short hash")
}

func TestTlogBuiltHereNotes(t *testing.T) {
	s := newSigner(t, "sovereign-gateway/journal/test-1")
	other := newSigner(t, "witness.example/w1")
	root := refSHA([]byte("root"))
	note := s.note(3, root, "")
	text := note[:strings.LastIndex(note, "\n\n")+1]

	// Other keys' lines are ignored, before and after ours.
	for _, n := range []string{text + "\n" + other.sigLine(text) + s.sigLine(text), text + "\n" + s.sigLine(text) + other.sigLine(text)} {
		head, err := sovereign.VerifyCheckpoint(n, s.vkey)
		if err != nil || head.Origin != s.name || head.TreeSize != 3 || !bytes.Equal(head.RootHash, root) || len(head.Extensions) != 0 {
			t.Fatalf("%+v %v", head, err)
		}
	}
	_, err := sovereign.VerifyCheckpoint(text+"\n"+other.sigLine(text), s.vkey)
	assertVerifyFails(t, err, "untrusted key", "only another key")
	wrongID := &testSigner{name: s.name, id: []byte("abcd"), priv: s.priv}
	_, err = sovereign.VerifyCheckpoint(text+"\n"+wrongID.sigLine(text), s.vkey)
	assertVerifyFails(t, err, "untrusted key", "another key id")
	tampered := strings.Replace(text, "\n3\n", "\n4\n", 1)
	_, err = sovereign.VerifyCheckpoint(tampered+"\n"+s.sigLine(text), s.vkey)
	assertVerifyFails(t, err, "bad signature", "tampered size")
	otherSigner := &testSigner{name: s.name, id: s.id, priv: other.priv}
	_, err = sovereign.VerifyCheckpoint(text+"\n"+s.sigLine(text)+otherSigner.sigLine(text), s.vkey)
	assertVerifyFails(t, err, "bad signature", "one bad of two")
	_, err = sovereign.VerifyCheckpoint(other.note(3, root, ""), s.vkey)
	assertVerifyFails(t, err, "untrusted key", "another origin")
	head, err := sovereign.VerifyCheckpoint(s.note(3, root, "ext-one\n"), s.vkey)
	if err != nil || len(head.Extensions) != 1 || head.Extensions[0] != "ext-one" {
		t.Fatalf("extension: %+v %v", head, err)
	}

	shortRoot := fmt.Sprintf("%s\n3\n%s\n", s.name, base64.StdEncoding.EncodeToString(make([]byte, 31)))
	missingRoot := s.name + "\n3\n"
	malformed := map[string]string{
		"leading zero":                s.note("03", root, ""),
		"negative size":               s.note("-3", root, ""),
		"short root":                  shortRoot + "\n" + s.sigLine(shortRoot),
		"no signature":                text + "\n",
		"no blank line":               text + s.sigLine(text),
		"carriage return":             strings.Replace(note, "\n3\n", "\r\n3\n", 1),
		"empty extension":             s.note(3, root, "a\n\nb\n"),
		"no trailing newline":         note[:len(note)-1],
		"seventeen signatures":        text + "\n" + strings.Repeat(s.sigLine(text), 17),
		"signature line without dash": text + "\n" + strings.TrimPrefix(s.sigLine(text), "\u2014"),
		"missing root":                missingRoot + "\n" + s.sigLine(missingRoot),
		"invalid UTF-8":               strings.Replace(note, "\n3\n", "\n3\xff\n", 1),
	}
	for label, n := range malformed {
		_, err := sovereign.VerifyCheckpoint(n, s.vkey)
		assertVerifyFails(t, err, "malformed", label)
	}
	key := s.vkey[strings.Index(s.vkey[len(s.name)+1:], "+")+len(s.name)+2:]
	algKey, _ := base64.StdEncoding.DecodeString(key)
	algKey[0] = 2
	for label, vk := range map[string]string{
		"wrong key id":      s.name + "+00000000+" + key,
		"upper-case id":     fmt.Sprintf("%s+%X+%s", s.name, s.id, key),
		"no key":            fmt.Sprintf("%s+%x", s.name, s.id),
		"another algorithm": fmt.Sprintf("%s+%x+%s", s.name, s.id, base64.StdEncoding.EncodeToString(algKey)),
	} {
		if label == "upper-case id" && strings.ToUpper(hex.EncodeToString(s.id)) == hex.EncodeToString(s.id) {
			continue
		}
		_, err := sovereign.VerifyCheckpoint(note, vk)
		assertVerifyFails(t, err, "malformed", label)
	}
}

// TestTlogRFC8032Key: a note signed with RFC 8032's first test key, its vkey written as the
// spec says, verifies (the empty tree).
func TestTlogRFC8032Key(t *testing.T) {
	seed, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	if hex.EncodeToString(pub) != "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a" {
		t.Fatalf("public key %x", pub)
	}
	s := &testSigner{name: "example.com/log", priv: priv}
	algKey := append([]byte{1}, pub...)
	s.id = refSHA([]byte(s.name+"\n"), algKey)[:4]
	vkey := fmt.Sprintf("%s+%x+%s", s.name, s.id, base64.StdEncoding.EncodeToString(algKey))
	head, err := sovereign.VerifyCheckpoint(s.note(0, refSHA(), ""), vkey)
	if err != nil || head.TreeSize != 0 || !bytes.Equal(head.RootHash, refSHA()) {
		t.Fatalf("%+v %v", head, err)
	}
}

// TestTlogClientCalls: the four calls against a fake gateway: paths, queries, text and JSON
// answers, typed errors.
func TestTlogClientCalls(t *testing.T) {
	s := newSigner(t, "sovereign-gateway/journal/fake")
	leaves := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	note := s.note(3, refMTH(leaves), "")
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent = append(sent, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		b64 := func(hs [][]byte) []string {
			out := []string{}
			for _, h := range hs {
				out = append(out, base64.StdEncoding.EncodeToString(h))
			}
			return out
		}
		switch r.URL.Path {
		case "/v1/activity/checkpoint":
			if !strings.Contains(r.Header.Get("Accept"), "text/plain") {
				t.Errorf("Accept %q", r.Header.Get("Accept"))
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, note)
		case "/v1/activity/checkpoint/key":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, s.vkey+"\n")
		case "/v1/activity/proof":
			if r.URL.Query().Get("request_id") == "req-x" {
				w.WriteHeader(404)
				fmt.Fprint(w, `{"error":{"message":"unknown request","type":"not_found_error","param":"request_id","code":null}}`)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"leaf_index": 1, "tree_size": 3, "hashes": b64(refPath(1, leaves))})
		case "/v1/activity/consistency":
			_ = json.NewEncoder(w).Encode(map[string]any{"from": 1, "to": 3, "hashes": b64(refProof(1, leaves))})
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	cl, err := sovereign.NewClient(srv.URL, sovereign.WithAPIKey("k"), sovereign.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := cl.Activity.Checkpoint(ctx)
	if err != nil || got != note {
		t.Fatalf("checkpoint %q %v", got, err)
	}
	if _, err := cl.Activity.Checkpoint(ctx, sovereign.ForReplica("jed-2")); err != nil {
		t.Fatal(err)
	}
	vkey, err := cl.Activity.CheckpointKey(ctx)
	if err != nil || vkey != s.vkey {
		t.Fatalf("key %q %v", vkey, err)
	}
	p, err := cl.Activity.InclusionProof(ctx, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sovereign.VerifyInclusion([]byte("b"), *p, note, vkey); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Activity.InclusionProof(ctx, "req-1", sovereign.AtTreeSize(3)); err != nil {
		t.Fatal(err)
	}
	c, err := cl.Activity.ConsistencyProof(ctx, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sovereign.VerifyConsistency(s.note(1, refMTH(leaves[:1]), ""), note, *c, vkey); err != nil {
		t.Fatal(err)
	}
	_, err = cl.Activity.InclusionProof(ctx, "req-x")
	if !errors.Is(err, sovereign.ErrNotFound) {
		t.Fatalf("unknown request: %v", err)
	}
	want := []string{
		"GET /v1/activity/checkpoint?",
		"GET /v1/activity/checkpoint?replica=jed-2",
		"GET /v1/activity/checkpoint/key?",
		"GET /v1/activity/proof?request_id=req-1",
		"GET /v1/activity/proof?request_id=req-1&tree_size=3",
		"GET /v1/activity/consistency?from=1&to=3",
		"GET /v1/activity/proof?request_id=req-x",
	}
	if strings.Join(sent, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sent\n%s\nwant\n%s", strings.Join(sent, "\n"), strings.Join(want, "\n"))
	}
}
