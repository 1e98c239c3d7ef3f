package sovereign_test

// TestMain starts `$SOVEREIGN_BIN demo` twice (plain http, and --tls) and reads the keys and
// addresses from their stdout; the integration tests use them. Without a binary the
// integration tests skip (saying so), unless SOVEREIGN_BIN names one that is missing: then
// they fail.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sovereign "github.com/sovereign-gateway/sovereign-go"
)

// demo is a running `sovereign demo`.
type demo struct {
	cmd      *exec.Cmd
	dataDir  string
	url      string
	admin    string
	member   string
	auditor  string
	tlsCA    string
	stderr   *syncBuffer
	startErr error
}

var (
	plainDemo  *demo
	tlsDemo    *demo
	binProblem string // why the integration tests cannot run ("" when they can)
	binMissing bool   // SOVEREIGN_BIN was given but is missing: fail, not skip
)

const startDeadline = 90 * time.Second

func TestMain(m *testing.M) {
	bin := os.Getenv("SOVEREIGN_BIN")
	explicit := bin != ""
	if !explicit {
		bin, _ = filepath.Abs("../../target/debug/sovereign")
	}
	if _, err := os.Stat(bin); err != nil {
		binProblem = fmt.Sprintf("no gateway binary at %s (set SOVEREIGN_BIN)", bin)
		binMissing = explicit
		os.Exit(m.Run())
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); plainDemo = startDemo(bin, false) }()
	go func() { defer wg.Done(); tlsDemo = startDemo(bin, true) }()
	wg.Wait()
	code := m.Run()
	plainDemo.stop()
	tlsDemo.stop()
	os.Exit(code)
}

// need returns the plain demo, or skips/fails the test when there is none.
func need(t *testing.T) *demo {
	t.Helper()
	return needDemo(t, plainDemo)
}

func needDemo(t *testing.T, d *demo) *demo {
	t.Helper()
	if binProblem != "" {
		if binMissing {
			t.Fatal(binProblem)
		}
		t.Skip(binProblem)
	}
	if d.startErr != nil {
		t.Fatalf("the demo did not start: %v\nstderr:\n%s", d.startErr, d.stderr.String())
	}
	return d
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startDemo(bin string, withTLS bool) *demo {
	d := &demo{stderr: &syncBuffer{}}
	dir, err := os.MkdirTemp("", "sovereign-go-test-")
	if err != nil {
		d.startErr = err
		return d
	}
	d.dataDir = dir
	port, err := freePort()
	if err != nil {
		d.startErr = err
		return d
	}
	args := []string{"demo", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dir}
	if withTLS {
		args = append(args, "--tls")
	}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Stderr = d.stderr
	// Spares the re-execution that sets it (docs/DOCUMENTS.md).
	d.cmd.Env = append(os.Environ(), "OMP_WAIT_POLICY=passive")
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		d.startErr = err
		return d
	}
	if err := d.cmd.Start(); err != nil {
		d.startErr = err
		return d
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			fields := strings.Fields(line)
			switch {
			case len(fields) >= 3 && fields[0] == "key":
				switch fields[1] {
				case "admin":
					d.admin = fields[2]
				case "member":
					d.member = fields[2]
				case "auditor":
					d.auditor = fields[2]
				}
			case len(fields) >= 3 && fields[0] == "tls" && fields[1] == "ca":
				d.tlsCA = fields[2]
			case strings.HasPrefix(line, "listening on "):
				d.url = strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
				if !sent {
					sent = true
					ready <- nil
				}
			}
		}
		if !sent {
			ready <- fmt.Errorf("stdout closed before `listening on` (%v)", sc.Err())
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case err := <-ready:
		if err == nil && (d.admin == "" || d.member == "" || d.auditor == "") {
			err = fmt.Errorf("missing key lines before `listening on`")
		}
		if err == nil && withTLS && d.tlsCA == "" {
			d.tlsCA = filepath.Join(dir, "tls", "ca.pem")
		}
		d.startErr = err
	case <-time.After(startDeadline):
		d.startErr = fmt.Errorf("no `listening on` within %s", startDeadline)
	}
	return d
}

func (d *demo) stop() {
	if d == nil {
		return
	}
	if d.cmd != nil && d.cmd.Process != nil {
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = d.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if d.dataDir != "" {
		os.RemoveAll(d.dataDir)
	}
}

// client of the demo with the given key (and options).
func (d *demo) client(t *testing.T, key string, opts ...sovereign.Option) *sovereign.Client {
	t.Helper()
	c, err := sovereign.NewClient(d.url, append([]sovereign.Option{sovereign.WithAPIKey(key), sovereign.WithTimeout(60 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 {
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	if len(out) > 4000 {
		out = "…" + out[len(out)-4000:]
	}
	return out
}
