package verify

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/testmodel"
)

// Corrupted-corpus test (issue 9.2): every corpus model truncated at 16 places and with
// 16 seeded sets of bit flips goes through ingest.Load and, when it loads, EqualFLOPs and
// Write into 2 or 3 stages. Each case must end in one clear one-line error or in an output
// directory that passes Check: never a panic, never a hang, never a partial directory or
// a temporary directory left beside it, never a change to the input.
//
// By default a deterministic subset runs (4 cases per model, rotating through the 32);
// ONNXPART_FULL_CORRUPT=1 runs all of them and logs the counts.

const (
	corruptTruncations = 16
	corruptFlipSets    = 16
	// corruptDeadline bounds one case (load + split + write + check of a 3 MB model takes
	// well under a second; the margin covers -race and a loaded machine).
	corruptDeadline = 2 * time.Minute
)

func fullCorrupt() bool { return os.Getenv("ONNXPART_FULL_CORRUPT") == "1" }

// corruptCase is one corrupted model.
type corruptCase struct {
	name  string
	model []byte // the corrupted .onnx
	data  []byte // the external data file, when the model has one (possibly corrupted)
	k     int
}

// truncationPoints: a few early cuts (inside the header, the first node, …) and evenly
// spaced ones up to the last byte.
func truncationPoints(n int) []int {
	pts := []int{1, 16, 256, 4096}
	for i := 1; len(pts) < corruptTruncations-1; i++ {
		pts = append(pts, n*i/(corruptTruncations-4))
	}
	pts = append(pts, n-1)
	for i := range pts {
		pts[i] = min(max(pts[i], 1), n-1)
	}
	return pts
}

// bulkSpans returns the byte ranges of large raw_data payloads (weights) in a serialized
// ModelProto: ModelProto.graph(7) → GraphProto.initializer(5) → TensorProto.raw_data(9).
// Flips aimed at the structure avoid them; flips anywhere mostly land in them.
func bulkSpans(b []byte) [][2]int {
	var spans [][2]int
	var walk func(b []byte, base int, path []protowire.Number)
	walk = func(b []byte, base int, path []protowire.Number) {
		for off := 0; off < len(b); {
			num, typ, n := protowire.ConsumeTag(b[off:])
			if n < 0 {
				return
			}
			off += n
			m := protowire.ConsumeFieldValue(num, typ, b[off:])
			if m < 0 {
				return
			}
			if typ == protowire.BytesType {
				v, h := protowire.ConsumeBytes(b[off:])
				start := base + off + h
				switch {
				case len(path) == 0 && num == 7, len(path) == 1 && num == 5:
					walk(v, start, append(path, num))
				case len(path) == 2 && num == 9 && len(v) > 64:
					spans = append(spans, [2]int{start, start + len(v)})
				}
			}
			off += m
		}
	}
	walk(b, 0, nil)
	return spans
}

// flipped returns a copy of b with 1, 2, 4 or 8 bits flipped (by j), anywhere (even j) or
// outside the weights' payloads (odd j).
func flipped(b []byte, rng *rand.Rand, j int, spans [][2]int) []byte {
	out := append([]byte(nil), b...)
	inBulk := func(p int) bool {
		for _, s := range spans {
			if p >= s[0] && p < s[1] {
				return true
			}
		}
		return false
	}
	bits := 1 << (j % 4)
	for f := 0; f < bits; f++ {
		p := rng.Intn(len(out))
		for try := 0; j%2 == 1 && inBulk(p) && try < 1000; try++ {
			p = rng.Intn(len(out))
		}
		out[p] ^= 1 << rng.Intn(8)
	}
	return out
}

// corruptCases makes every case for one model (all of them, or the default subset).
func corruptCases(name string, model, data []byte, index int, full bool) []corruptCase {
	h := fnv.New64a()
	h.Write([]byte(name))
	seed := int64(h.Sum64() >> 1)
	pick := func(i, n, stride, off int) bool {
		return full || i == (index*stride+off)%n || i == (index*stride+off+n/2)%n
	}
	var cases []corruptCase
	for i, p := range truncationPoints(len(model)) {
		if pick(i, corruptTruncations, 5, 2) {
			cases = append(cases, corruptCase{name: fmt.Sprintf("truncated@%d", p), model: model[:p], data: data, k: 2 + i%2})
		}
	}
	spans := bulkSpans(model)
	for j := 0; j < corruptFlipSets; j++ {
		// Each set is drawn from its own stream, so that the subset sees the same bytes as
		// the full run.
		rng := rand.New(rand.NewSource(seed + int64(j)))
		b := flipped(model, rng, j, spans)
		if pick(j, corruptFlipSets, 3, 1) {
			where := "anywhere"
			if j%2 == 1 {
				where = "structure"
			}
			cases = append(cases, corruptCase{name: fmt.Sprintf("flips%02d(%d bits, %s)", j, 1<<(j%4), where), model: b, data: data, k: 2 + j%2})
		}
	}
	if data != nil {
		// The external data file truncated (the model intact).
		for i, frac := range []int{0, 1, 2} {
			if full || i == index%3 {
				cases = append(cases, corruptCase{name: fmt.Sprintf("data truncated to %d/3", frac), model: model, data: data[:len(data)*frac/3], k: 3})
			}
		}
	}
	return cases
}

// corruptOutcome is what one case ended in.
type corruptOutcome struct {
	kind string // "written" or the error's kind
	err  error
}

// errorKind names the kind of a case's error for the counts: the *diag.Error's kind and
// subject kind ("input file", "usage", "input stage"), or "other TYPE" for an error of no
// documented kind.
func errorKind(err error) string {
	var de *diag.Error
	if !errors.As(err, &de) {
		return fmt.Sprintf("other %T", err)
	}
	if de.Subject.Kind == diag.None {
		return de.Kind.String()
	}
	return de.Kind.String() + " " + de.Subject.Kind.String()
}

// runCorruptCase loads, splits and writes one case; it runs in its own goroutine and turns
// a panic into a test failure carrying the stack.
func runCorruptCase(modelPath, out string, k int) (res corruptOutcome, panicked string) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	m, err := ingest.Load(modelPath, ingest.Options{Dims: corruptDims(modelPath)})
	if err != nil {
		return corruptOutcome{errorKind(err), err}, ""
	}
	stage, err := emit.EqualFLOPs(m.Graph, k)
	if err != nil {
		return corruptOutcome{errorKind(err), err}, ""
	}
	if _, err := emit.Write(m, &emit.Assignment{Stage: stage}, out, emit.Options{}); err != nil {
		return corruptOutcome{errorKind(err), err}, ""
	}
	if _, err := Check(out); err != nil {
		return corruptOutcome{"check failed", err}, ""
	}
	return corruptOutcome{"written", nil}, ""
}

// corruptDims binds the dynamic-batch model's batch (its flipped variants may have lost
// it, which is then a usage error like any other).
func corruptDims(path string) map[string]int64 {
	if strings.Contains(filepath.Base(path), "dynbatch") {
		return map[string]int64{"batch": 2}
	}
	return nil
}

func TestCorruptedCorpus(t *testing.T) {
	var files []string
	filepath.WalkDir(testmodel.CorpusDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".onnx" {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("model corpus not found at " + testmodel.CorpusDir)
	}
	sort.Strings(files)
	full := fullCorrupt()
	start := time.Now()
	counts := map[string]int{}
	total := 0
	for index, src := range files {
		base := filepath.Base(src)
		model, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(src + ".data")
		if err != nil {
			data = nil
		}
		// The model's own directory: its (corrupted) file and, when it has one, its data.
		dir := t.TempDir()
		modelPath := filepath.Join(dir, base)
		for _, c := range corruptCases(base, model, data, index, full) {
			total++
			name := base + "/" + c.name
			if err := os.WriteFile(modelPath, c.model, 0o644); err != nil {
				t.Fatal(err)
			}
			if c.data != nil {
				if err := os.WriteFile(modelPath+".data", c.data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			parent := t.TempDir()
			out := filepath.Join(parent, "out")
			type result struct {
				res      corruptOutcome
				panicked string
			}
			done := make(chan result, 1)
			go func() {
				r, p := runCorruptCase(modelPath, out, c.k)
				done <- result{r, p}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(corruptDeadline):
				buf := make([]byte, 8<<20)
				n := runtime.Stack(buf, true)
				t.Fatalf("%s: no result within %v (hang?); goroutines:\n%s", name, corruptDeadline, buf[:n])
			}
			if r.panicked != "" {
				t.Errorf("%s: %s", name, r.panicked)
				continue
			}
			counts[r.res.kind]++
			checkCorruptOutcome(t, name, modelPath, parent, out, r.res)
			if got, _ := os.ReadFile(modelPath); !bytes.Equal(got, c.model) {
				t.Errorf("%s: the input model changed", name)
			}
		}
	}
	var kinds []string
	for k := range counts {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, counts[k]))
	}
	sort.Strings(kinds)
	msg := fmt.Sprintf("%d cases of %d models in %v: %s", total, len(files), time.Since(start).Round(time.Millisecond), strings.Join(kinds, ", "))
	if full {
		t.Log(msg)
	} else {
		t.Log(msg + " (the subset; ONNXPART_FULL_CORRUPT=1 runs all)")
	}
	if counts["written"] == 0 {
		t.Error("no corrupted model loaded and was written: the cases do not reach emit")
	}
}

// checkCorruptOutcome checks one case's end: one clear line, or a directory that passes
// Check; nothing else beside it.
func checkCorruptOutcome(t *testing.T, name, modelPath, parent, out string, res corruptOutcome) {
	t.Helper()
	entries, _ := os.ReadDir(parent)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	switch res.kind {
	case "written":
		if len(left) != 1 || left[0] != "out" {
			t.Errorf("%s: written, but beside it: %v", name, left)
		}
		return
	case "check failed":
		t.Errorf("%s: written, but the output does not pass Check: %v", name, res.err)
		return
	}
	if len(left) != 0 {
		t.Errorf("%s: failed (%v) but left %v", name, res.err, left)
	}
	msg := res.err.Error()
	switch {
	case msg == "":
		t.Errorf("%s: empty error message (%T)", name, res.err)
	case strings.ContainsAny(msg, "\n\r"):
		t.Errorf("%s: message spans lines: %q", name, msg)
	case strings.HasPrefix(res.kind, "other"):
		t.Errorf("%s: error of no documented kind (%T): %v", name, res.err, msg)
	case res.kind == "input file" && !strings.Contains(msg, modelPath):
		t.Errorf("%s: the message does not name the model file: %v", name, msg)
	}
	if testing.Verbose() && fullCorrupt() {
		t.Logf("%s: %s: %v", name, res.kind, msg)
	}
}
