package main

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart"
)

// progress prints phases and solver improvements on stderr. On a terminal it keeps one live
// line, redrawn at least every progressTick with the elapsed time against the time limit,
// the current phase and the best plan, bound and gap so far; off a terminal it prints a line
// when the phase changes and at least every offTerminalEvery while a phase runs (a log shows
// that a long search is alive and how it stands). The last line states the result as the
// output does (result). Nothing shows during the first progressDelay: a usage or input error
// found at once then prints alone, and what was held back is dropped with it (stop) or shown
// once planning has produced a plan (done).
type progress struct {
	e     *env
	quiet bool
	start time.Time
	limit time.Duration // the planning time limit shown beside the elapsed time; 0: none

	mu      sync.Mutex
	live    bool     // a live line is on the terminal
	shown   bool     // lines go out as they come
	ended   bool     // done or stop was called
	pending []string // held back before shown; notes start with "note: "
	timer   *time.Timer
	quit    chan struct{} // ends the redraw loop
	// The state the line shows: the phase, and the best plan and bound reported in it.
	phaseName        string
	best, bound, gap float64
	lastPrintedPhase string
	lastPrint        time.Time // when the last line went out
}

// progressDelay is how long progress is held back; progressTick how often a terminal's live
// line is redrawn.
const (
	progressDelay = time.Second
	progressTick  = 250 * time.Millisecond
)

// offTerminalEvery is how often, at least, a line goes out off a terminal while a phase runs
// (a variable for the test).
var offTerminalEvery = 5 * time.Second

func newProgress(e *env, quiet bool, limit time.Duration) *progress {
	p := &progress{e: e, quiet: quiet, start: time.Now(), limit: limit, quit: make(chan struct{})}
	p.timer = time.AfterFunc(progressDelay, p.show)
	if !quiet {
		go p.redraw()
	}
	return p
}

// redraw keeps a terminal's live line current, so that the elapsed time moves while a solver
// reports nothing; off a terminal it prints the state again when no line went out for
// offTerminalEvery.
func (p *progress) redraw() {
	tick := progressTick
	if !p.e.isTTY {
		tick = offTerminalEvery / 5
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
			p.mu.Lock()
			if p.shown && !p.ended && p.phaseName != "" && (p.e.isTTY || time.Since(p.lastPrint) >= offTerminalEvery) {
				p.print(p.render())
			}
			p.mu.Unlock()
		}
	}
}

// render is the progress line: "[ 12.3s of 30s] split: best 670µs, bound 572µs, gap 14.7%".
func (p *progress) render() string {
	el := time.Since(p.start).Seconds()
	s := fmt.Sprintf("[%5.1fs", el)
	if p.limit > 0 {
		s += " of " + p.limit.String()
	}
	s += "] " + p.phaseName
	if p.best > 0 {
		s += ": best " + dur(p.best)
		if p.bound > 0 {
			s += fmt.Sprintf(", bound %s, gap %.1f%%", dur(p.bound), 100*p.gap)
		}
	}
	return s
}

func (p *progress) phase(s string) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phaseName, p.best, p.bound, p.gap = s, 0, 0, 0
	p.emit()
}

// note prints a fact the user should know (even with -q), held back like progress.
func (p *progress) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.shown {
		p.pending = append(p.pending, "note: "+s)
		return
	}
	p.clearLive()
	fmt.Fprintf(p.e.stderr, "note: %s\n", s)
}

func (p *progress) update(pr onnxpart.Progress) {
	if p.quiet {
		return
	}
	if pr.Objective == 0 && pr.Phase != "" {
		p.phase(pr.Phase) // one of onnxpart.Plan's phases starts
		return
	}
	if math.IsInf(pr.Objective, 0) || pr.Objective <= 0 {
		return // nothing found yet
	}
	if pr.Phase == "" {
		pr.Phase = "search"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phaseName, p.best, p.bound, p.gap = pr.Phase, pr.Objective, pr.LowerBound, pr.Gap
	p.emit()
}

// emit shows the state: on a terminal the live line is redrawn; off a terminal a line
// goes out when the phase changes. p.mu is held.
func (p *progress) emit() {
	if !p.e.isTTY {
		if p.phaseName == p.lastPrintedPhase {
			return
		}
		p.lastPrintedPhase = p.phaseName
	}
	s := p.render()
	if !p.shown {
		p.pending = append(p.pending, s)
		return
	}
	p.print(s)
}

// result shows the plan as the output states it (its objective, bound and gap), so that the
// last progress line and the result agree: the search's last report can predate the final
// bounds and the plan's pricing.
func (p *progress) result(best, bound, gap float64) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phaseName, p.best, p.bound, p.gap = "result", best, bound, gap
	p.emit()
}

// print writes one progress line: on a terminal it replaces the live line.
func (p *progress) print(s string) {
	p.lastPrint = time.Now()
	if p.e.isTTY {
		fmt.Fprintf(p.e.stderr, "\r\033[K%s", s)
		p.live = true
		return
	}
	fmt.Fprintln(p.e.stderr, s)
}

func (p *progress) clearLive() {
	if p.live {
		fmt.Fprint(p.e.stderr, "\r\033[K")
		p.live = false
	}
}

// show lets lines out: the held-back notes, and the progress lines (on a terminal only the
// current state, which a live line would have shown).
func (p *progress) show() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flush()
}

func (p *progress) flush() {
	if p.shown {
		return
	}
	p.shown = true
	for _, s := range p.pending {
		switch {
		case strings.HasPrefix(s, "note: "):
			p.clearLive()
			fmt.Fprintln(p.e.stderr, s)
		case !p.e.isTTY:
			p.print(s)
		}
	}
	if p.e.isTTY && p.phaseName != "" && !p.ended {
		p.print(p.render())
	}
	p.pending = nil
}

// done ends the progress once a plan is found: what was held back is shown, then the live
// line is cleared.
func (p *progress) done() {
	p.timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flush()
	p.end()
}

// end stops the redraws and clears the live line. p.mu is held.
func (p *progress) end() {
	if !p.ended {
		p.ended = true
		close(p.quit)
	}
	p.clearLive()
}

// stop ends the progress on any path: held-back progress lines are dropped (an error
// follows, and prints alone), notes are kept.
func (p *progress) stop() {
	p.timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.shown {
		p.shown = true
		for _, s := range p.pending {
			if strings.HasPrefix(s, "note: ") {
				fmt.Fprintln(p.e.stderr, s)
			}
		}
		p.pending = nil
	}
	p.end()
}
