package verify

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/hugemodel"
)

// Huge models (issue 9.3). TestWriteStreamsExternalData runs by default on a 64 MiB model;
// TestHugeModel (ONNXPART_HUGE=1) generates a model whose weights are over 2 GiB, loads,
// splits, writes and verifies it, and reports peak memory and time per phase.

// allocDuring is the number of bytes the Go heap allocated while f ran.
func allocDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestWriteStreamsExternalData: ingest does not read external weights, emit copies them
// into the stages' data files in small pieces rather than holding them, and Check hashes
// those files as it reads them: loading, writing and checking a model with 64 MiB of
// external weights allocates a few MiB each.
func TestWriteStreamsExternalData(t *testing.T) {
	spec := hugemodel.Spec{Layers: 4, Dim: 2048}
	p, err := hugemodel.Write(t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	var m *ingest.Model
	if n := allocDuring(func() { m, err = ingest.Load(p, ingest.Options{}) }); err != nil {
		t.Fatal(err)
	} else if n > 8<<20 {
		t.Errorf("loading a model with %d bytes of external weights allocated %d bytes", spec.WeightBytes(), n)
	}
	stage, err := emit.EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	var man *emit.Manifest
	if n := allocDuring(func() { man, err = emit.Write(m, &emit.Assignment{Stage: stage}, out, emit.Options{}) }); err != nil {
		t.Fatal(err)
	} else if n > 16<<20 {
		t.Errorf("writing %d bytes of external weights allocated %d bytes", spec.WeightBytes(), n)
	}
	var written int64
	for _, st := range man.Stages {
		fi, err := os.Stat(filepath.Join(out, st.DataFile))
		if st.DataFile == "" || err != nil {
			t.Fatalf("stage %d: data file %q: %v", st.Index, st.DataFile, err)
		}
		written += fi.Size()
	}
	if written < spec.WeightBytes() {
		t.Errorf("the stages' data files hold %d bytes, the weights %d", written, spec.WeightBytes())
	}
	// Check hashes the data files as it reads them.
	if n := allocDuring(func() { _, err = Check(out) }); err != nil {
		t.Fatal(err)
	} else if n > 16<<20 {
		t.Errorf("checking %d bytes of stage data files allocated %d bytes", written, n)
	}
}

// memStatus reads VmRSS and VmHWM (peak RSS) from /proc/self/status, in bytes.
func memStatus() (rss, hwm int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1, -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if k == "VmRSS" {
			rss = n << 10
		} else {
			hwm = n << 10
		}
	}
	return rss, hwm
}

// resetPeak resets VmHWM to the current RSS (Linux 4.0+); false when it cannot.
func resetPeak() bool {
	runtime.GC()
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// TestHugeModel (ONNXPART_HUGE=1; ONNXPART_HUGE_DIR chooses the disk, default the test's
// temporary directory): a chain of 10 MatMul/Add layers of 8192×8192 float weights
// (2.5 GiB, in a sparse external data file) is loaded, split into 4 stages by FLOPs,
// written with each stage's weights in stage<i>.onnx.data, checked, and verified in ONNX
// Runtime. Peak RSS while loading and writing must stay well under the weights' size.
func TestHugeModel(t *testing.T) {
	if os.Getenv("ONNXPART_HUGE") != "1" {
		t.Skip("set ONNXPART_HUGE=1 to run (writes ~2.5 GiB, a few minutes)")
	}
	root := os.Getenv("ONNXPART_HUGE_DIR")
	if root == "" {
		root = t.TempDir()
	} else {
		d, err := os.MkdirTemp(root, "onnxpart-huge-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(d)
		root = d
	}
	spec := hugemodel.Spec{Layers: 10, Dim: 8192}
	weights := spec.WeightBytes()
	if weights <= 2<<30 {
		t.Fatalf("the model's weights are %d bytes, not over 2 GiB", weights)
	}
	began := time.Now()
	defer func() { t.Logf("test body %v (then removing the files)", time.Since(began).Round(time.Millisecond)) }()
	canReset := resetPeak()
	rss0, _ := memStatus()
	t.Logf("weights %s (%d bytes); RSS at start %s; peak reset %v", mib(weights), weights, mib(rss0), canReset)

	phase := func(name string, f func() error) (peak int64) {
		t.Helper()
		resetPeak()
		start := time.Now()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, peak = memStatus()
		t.Logf("%-8s %8v  peak RSS %s", name, time.Since(start).Round(time.Millisecond), mib(peak))
		return peak
	}
	var modelPath string
	phase("generate", func() (err error) {
		modelPath, err = hugemodel.Write(root, spec)
		return err
	})
	var m *ingest.Model
	loadPeak := phase("load", func() (err error) {
		m, err = ingest.Load(modelPath, ingest.Options{})
		return err
	})
	var stage []int
	phase("split", func() (err error) {
		stage, err = emit.EqualFLOPs(m.Graph, 4)
		return err
	})
	out := filepath.Join(root, "out")
	var man *emit.Manifest
	writePeak := phase("write", func() (err error) {
		man, err = emit.Write(m, &emit.Assignment{Stage: stage}, out, emit.Options{})
		return err
	})
	if len(man.Stages) != 4 {
		t.Fatalf("%d stages", len(man.Stages))
	}
	var written int64
	for _, st := range man.Stages {
		fi, err := os.Stat(filepath.Join(out, st.DataFile))
		if st.DataFile == "" || err != nil {
			t.Fatalf("stage %d: data file %q: %v", st.Index, st.DataFile, err)
		}
		written += fi.Size()
		t.Logf("stage %d: %d nodes, %s of weights in %s", st.Index, len(st.Nodes), mib(st.ParamsBytes), st.DataFile)
	}
	if written < weights {
		t.Errorf("the stages' data files hold %d bytes, the weights %d", written, weights)
	}
	// Ingest and emit hold no weights: their peak stays far below the weights' size.
	if limit := int64(512 << 20); canReset && (loadPeak > limit || writePeak > limit) {
		t.Errorf("peak RSS loading %s, writing %s: over %s for %s of weights", mib(loadPeak), mib(writePeak), mib(limit), mib(weights))
	}
	checkPeak := phase("check", func() error {
		_, err := Check(out)
		return err
	})
	if canReset && checkPeak > weights/2 {
		t.Errorf("peak RSS checking %s, for %s of weights", mib(checkPeak), mib(weights))
	}
	if !ortAvailable() {
		t.Log("ONNX Runtime not available: not verified")
		return
	}
	phase("verify", func() error {
		rep, err := Run(context.Background(), out, Options{})
		if err != nil {
			return err
		}
		if !rep.Pass {
			return MismatchOf(rep)
		}
		return nil
	})
}
