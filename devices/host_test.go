package devices

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/profile"
)

func TestProbeHostWithoutBench(t *testing.T) {
	h, err := ProbeHost(context.Background(), HostOptions{NoBench: true})
	if err != nil {
		t.Fatal(err)
	}
	if h.Model == "" || h.Cores < 1 || h.Bench != nil {
		t.Fatalf("host %+v", h)
	}
	d := HostDevice(h, "cpu", 1)
	if d.Kind != profile.CPU || !d.Host || d.Threads != 1 || !(d.Peak[profile.FP32].Value > 0) || d.Bandwidth.Source != profile.SourceDefault {
		t.Errorf("device %+v", d)
	}
	if d.Peak[profile.FP32].Source != profile.SourceHost && d.Peak[profile.FP32].Source != profile.SourceDefault {
		t.Errorf("peak source %s", d.Peak[profile.FP32].Source)
	}
	all := HostDevice(h, "cpu", 0)
	if all.Threads != h.Cores || !near(all.Peak[profile.FP32].Value, float64(h.Cores)*d.Peak[profile.FP32].Value, 1e-9) {
		t.Errorf("all cores: %d threads, peak %g vs one %g", all.Threads, all.Peak[profile.FP32].Value, d.Peak[profile.FP32].Value)
	}
	if runtime.GOARCH == "amd64" && d.VectorWidth < 4 {
		t.Errorf("vector width %d", d.VectorWidth)
	}
}

func writeBench(t *testing.T, path string, b profile.HostBench) {
	t.Helper()
	data, _ := json.Marshal(b)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A valid cache entry is used as is (no benchmark runs); a stale or corrupt one is replaced.
func TestHostBenchCache(t *testing.T) {
	dir := t.TempDir()
	h, _ := ProbeHost(context.Background(), HostOptions{NoBench: true})
	path := filepath.Join(dir, benchKey(h))
	sentinel := profile.HostBench{Version: benchVersion, CPU: h.Model, Cores: h.Cores, Arch: runtime.GOARCH,
		GEMM1: 1.25e9, GEMMAll: 2.5e9, Copy1: 3.5e9, CopyAll: 7e9}
	writeBench(t, path, sentinel)
	start := time.Now()
	h2, err := ProbeHost(context.Background(), HostOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !h2.Cached || h2.CacheAt != path || h2.Bench.GEMM1 != 1.25e9 || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("cache not used: %+v", h2.Bench)
	}
	if d := HostDevice(h2, "cpu", 1); d.Bandwidth.Value != 3.5e9 || d.Bandwidth.Source != profile.SourceMeasured {
		t.Errorf("bandwidth %+v", d.Bandwidth)
	}

	stale := sentinel
	stale.Version = benchVersion - 1
	writeBench(t, path, stale)
	h3, err := ProbeHost(context.Background(), HostOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if h3.Cached || h3.Bench.GEMM1 == 1.25e9 || !(h3.Bench.GEMM1 > 0) || !(h3.Bench.Copy1 > 0) || !(h3.Bench.CopyAll > 0) {
		t.Fatalf("stale cache reused or bad rerun: %+v", h3.Bench)
	}
	var back profile.HostBench
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &back); err != nil || back.Version != benchVersion || back.GEMM1 != h3.Bench.GEMM1 {
		t.Errorf("cache not rewritten: %s", data)
	}
	// NoCache neither reads nor writes.
	writeBench(t, path, sentinel)
	h4, err := ProbeHost(context.Background(), HostOptions{CacheDir: dir, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if h4.Cached || h4.Bench.GEMM1 == 1.25e9 {
		t.Error("NoCache read the cache")
	}
	data, _ = os.ReadFile(path)
	json.Unmarshal(data, &back)
	if back.GEMM1 != 1.25e9 {
		t.Error("NoCache wrote the cache")
	}
}

func TestHostBenchCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if _, err := RunHostBench(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Error("cancelled benchmark kept running")
	}
}

func TestInterp(t *testing.T) {
	for _, c := range []struct {
		one, all float64
		t, cores int
		want     float64
	}{{10, 40, 1, 4, 10}, {10, 40, 4, 4, 40}, {10, 40, 8, 4, 40}, {10, 40, 2, 4, 20}, {10, 5, 2, 2, 10}} {
		if got := interp(c.one, c.all, c.t, c.cores); got != c.want {
			t.Errorf("interp(%v) = %g", c, got)
		}
	}
}
