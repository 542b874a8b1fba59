//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the master to read what the command writes, the
// terminal to give it as stderr.
func openPTY(t *testing.T) (master, term *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the terminal: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// chunk is what the terminal received in one read, and when.
type chunk struct {
	at   time.Duration
	text string
}

// liveLines splits a terminal's output into the live line's redraws ("\r\033[K…").
var redrawRE = regexp.MustCompile(`\r\x1b\[K(\[[^\r\x1b]*)`)

// TestProgressTerminal runs onnxpart (the test binary as the command, as the scripts do)
// with stderr on a pseudo-terminal, on a placement that searches for its whole time limit:
// the live line must be redrawn at least once a second from the first second to the end,
// with the elapsed time moving against the time limit, the phase and best/bound/gap; and it
// must be cleared at the end.
func TestProgressTerminal(t *testing.T) {
	models, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "models"))
	model := filepath.Join(models, "bert_base_like_small.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skip("the shared model corpus is not present")
	}
	bin, err := exec.LookPath("onnxpart") // testscript.Main put the test binary there
	if err != nil {
		t.Skip("onnxpart is not on PATH")
	}
	master, term := openPTY(t)
	cmd := exec.Command(bin, model, "--devices", "a100-80g,t4,cpu", "--time-limit", "5s", "-o", "-")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, term
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.Close() // the child holds it; the master reads EOF (EIO) when it exits
	chunks := make(chan chunk, 1024)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				chunks <- chunk{time.Since(start), string(buf[:n])}
			}
			if err != nil {
				close(chunks)
				return
			}
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("onnxpart: %v\n%s", err, stdout.String())
	}
	end := time.Since(start)
	var all strings.Builder
	var redraws []chunk
	timeout := time.After(5 * time.Second)
read:
	for {
		select {
		case c, ok := <-chunks:
			if !ok {
				break read
			}
			all.WriteString(c.text)
			for _, m := range redrawRE.FindAllStringSubmatch(c.text, -1) {
				redraws = append(redraws, chunk{c.at, m[1]})
			}
		case <-timeout:
			break read
		}
	}
	out := all.String()
	t.Logf("%d redraws in %v; last: %q", len(redraws), end.Round(time.Millisecond), lastText(redraws))
	if len(redraws) == 0 {
		t.Fatalf("no live line on the terminal:\n%q", out)
	}
	// Held back for the first second, then redrawn at least once a second until planning ends.
	if redraws[0].at < 900*time.Millisecond {
		t.Errorf("first progress line at %v, before the 1 s hold-back", redraws[0].at)
	}
	elapsedRE := regexp.MustCompile(`^\[\s*([0-9.]+)s of 5s\] (\S[^:]*)`)
	var last float64
	var sawBest bool
	phases := map[string]bool{}
	for i, r := range redraws {
		if i > 0 {
			if gap := r.at - redraws[i-1].at; gap > 1100*time.Millisecond {
				t.Errorf("the live line froze for %v (from %v: %q)", gap, redraws[i-1].at, redraws[i-1].text)
			}
		}
		m := elapsedRE.FindStringSubmatch(r.text)
		if m == nil {
			t.Errorf("progress line %q lacks the elapsed time against the limit and a phase", r.text)
			continue
		}
		el, _ := strconv.ParseFloat(m[1], 64)
		if el < last {
			t.Errorf("elapsed time went back: %v after %v", el, last)
		}
		last = el
		phases[m[2]] = true
		if strings.Contains(r.text, ": best ") && strings.Contains(r.text, ", bound ") && strings.Contains(r.text, ", gap ") {
			sawBest = true
		}
	}
	if last < 4 {
		t.Errorf("the last progress line says %vs elapsed of a 5 s search", last)
	}
	if !sawBest {
		t.Error("no progress line shows best, bound and gap")
	}
	t.Logf("phases on the live line: %v", phases)
	// The live line is cleared at the end: nothing follows the last "\r\033[K".
	if i := strings.LastIndex(out, "\r\x1b[K"); i < 0 || strings.TrimSpace(out[i+4:]) != "" {
		t.Errorf("the live line is not cleared at the end: %q", out[max(0, len(out)-200):])
	}
}

func lastText(c []chunk) string {
	if len(c) == 0 {
		return ""
	}
	return c[len(c)-1].text
}

// Off a terminal, progress is one line per phase: no line repeats the phase of the one
// before it.
func TestProgressPlainLines(t *testing.T) {
	models, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "models"))
	model := filepath.Join(models, "bert_base_like_small.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skip("the shared model corpus is not present")
	}
	var stdout, stderr bytes.Buffer
	e := &env{stdout: &stdout, stderr: &stderr}
	if code := run(t.Context(), e, []string{model, "--devices", "a100-80g,t4,cpu", "--time-limit", "3s", "-o", "-"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	t.Logf("stderr:\n%s", stderr.String())
	phaseRE := regexp.MustCompile(`^\[\s*[0-9.]+s of 3s\] ([^:]+)`)
	prev := ""
	n := 0
	for _, l := range lines {
		if strings.Contains(l, "\r") || strings.Contains(l, "\x1b") {
			t.Errorf("terminal control in plain output: %q", l)
		}
		m := phaseRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n++
		if m[1] == prev {
			t.Errorf("two lines for phase %q", prev)
		}
		prev = m[1]
	}
	if n < 3 {
		t.Errorf("%d progress lines, want one per phase (reading, devices, planning, the solvers')", n)
	}
}
