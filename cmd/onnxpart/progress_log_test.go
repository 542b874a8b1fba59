package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the progress goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Off a terminal a phase that reports nothing still prints a line every offTerminalEvery
// (a log of a 30 s search is not silent between its first and last line), and the last line
// is the result.
func TestProgressOffTerminal(t *testing.T) {
	defer func(d time.Duration) { offTerminalEvery = d }(offTerminalEvery)
	offTerminalEvery = 60 * time.Millisecond
	var out syncBuffer
	p := newProgress(&env{stderr: &out}, false, 0)
	p.show()
	p.phase("solve")
	time.Sleep(10 * offTerminalEvery)
	p.result(2e-3, 1e-3, 0.5)
	p.done()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	solve := 0
	for _, l := range lines {
		if strings.HasSuffix(l, "] solve") {
			solve++
		}
	}
	if solve < 3 {
		t.Errorf("%d solve lines in 10 periods, want several:\n%s", solve, out.String())
	}
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, "] result: best 2ms, bound 1ms, gap 50.0%") {
		t.Errorf("last line %q, want the result", last)
	}
}
