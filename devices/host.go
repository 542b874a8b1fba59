package devices

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/onnxpart/onnxpart/internal/atomicfs"
	"github.com/onnxpart/onnxpart/profile"
	"golang.org/x/sys/cpu"
	"gorgonia.org/tensor"
)

// HostOptions control how the host CPU is described.
type HostOptions struct {
	// CacheDir holds the microbenchmark results; "" means
	// ${XDG_CACHE_HOME:-$HOME/.cache}/onnxpart.
	CacheDir string
	// NoCache neither reads nor writes the cache; Refresh ignores what is there and rewrites it.
	NoCache, Refresh bool
	// NoBench skips the microbenchmarks: peaks and bandwidth become nominal figures from the
	// ISA flags and clock (source default).
	NoBench bool
}

// benchVersion changes when the microbenchmarks change, invalidating old caches.
const benchVersion = 3

// ProbeHost describes the machine's CPU: model, logical cores, ISA flags and RAM from the
// operating system, and (unless opts.NoBench) the cached or freshly run microbenchmarks.
func ProbeHost(ctx context.Context, opts HostOptions) (*profile.Host, error) {
	h := &profile.Host{Model: cpuModel(), Cores: runtime.NumCPU(), Flags: isaFlags()}
	if mem, ok := memTotal(); ok {
		h.Memory = fig(mem, profile.SourceHost, "MemTotal in /proc/meminfo")
	} else {
		h.Memory = fig(0, profile.SourceDefault, "unknown: no memory limit")
	}
	if opts.NoBench {
		return h, nil
	}
	b, path, cached, err := cachedBench(ctx, h, opts)
	if err != nil {
		return nil, err
	}
	h.Bench, h.Cached, h.CacheAt = b, cached, path
	return h, nil
}

func cacheDir(opts HostOptions) (string, error) {
	if opts.CacheDir != "" {
		return opts.CacheDir, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "onnxpart"), nil
}

// benchKey names the cache file: it changes with the CPU model, core count, architecture
// and benchmark version.
func benchKey(h *profile.Host) string {
	s := sha256.Sum256([]byte(fmt.Sprintf("%s|%d|%s|%d", h.Model, h.Cores, runtime.GOARCH, benchVersion)))
	return "host-" + hex.EncodeToString(s[:6]) + ".json"
}

func cachedBench(ctx context.Context, h *profile.Host, opts HostOptions) (b *profile.HostBench, path string, cached bool, err error) {
	dir, derr := cacheDir(opts)
	if derr == nil && !opts.NoCache {
		path = filepath.Join(dir, benchKey(h))
		if !opts.Refresh {
			if data, err := os.ReadFile(path); err == nil {
				var c profile.HostBench
				if json.Unmarshal(data, &c) == nil && benchValid(&c, h) {
					return &c, path, true, nil
				}
			}
		}
	}
	b, err = RunHostBench(ctx)
	if err != nil {
		return nil, "", false, err
	}
	b.CPU, b.Cores, b.Arch = h.Model, h.Cores, runtime.GOARCH
	if path != "" {
		// A cache that cannot be written is not an error: the figures are still good.
		if err := writeFileAtomic(path, b); err != nil {
			path = ""
		}
	}
	return b, path, false, nil
}

func benchValid(b *profile.HostBench, h *profile.Host) bool {
	ok := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
	return b.Version == benchVersion && b.CPU == h.Model && b.Cores == h.Cores && b.Arch == runtime.GOARCH &&
		ok(b.GEMM1) && ok(b.GEMMAll) && ok(b.Copy1) && ok(b.CopyAll)
}

func writeFileAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfs.WriteFile(path, append(data, '\n'), 0o644)
}

// Benchmark budget: each of the four measurements runs a few batches of about batchTime.
const (
	benchBatches = 4
	batchTime    = 60 * time.Millisecond
)

// RunHostBench runs the GEMM and copy microbenchmarks (about one second in all). It stops
// early with ctx's error when ctx is done.
func RunHostBench(ctx context.Context) (*profile.HostBench, error) {
	start := time.Now()
	b := &profile.HostBench{Version: benchVersion, When: start.UTC().Truncate(time.Second)}
	var err error
	if b.GEMM1, err = gemmRate(ctx, 64, 1024, 192); err != nil {
		return nil, err
	}
	if b.GEMMAll, err = gemmRate(ctx, 256, 256, 256); err != nil {
		return nil, err
	}
	if b.Copy1, err = copyRate(ctx, 1); err != nil {
		return nil, err
	}
	if b.CopyAll, err = copyRate(ctx, runtime.NumCPU()); err != nil {
		return nil, err
	}
	if b.Clock, err = clockRate(ctx); err != nil {
		return nil, err
	}
	if b.Read, err = readSweep(ctx); err != nil {
		return nil, err
	}
	b.Seconds = time.Since(start).Seconds()
	return b, nil
}

// bestRate runs work (which does `units` units of work per call) in batches of about
// batchTime and returns the best rate in units per second. With oneThread, work runs on
// this goroutine's locked OS thread and is timed by that thread's CPU time, so that other
// processes sharing the core do not lower the figure; otherwise by wall time.
func bestRate(ctx context.Context, units float64, oneThread bool, work func() error) (float64, error) {
	if oneThread {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	clock := func() float64 {
		if oneThread {
			return ThreadCPU()
		}
		return float64(time.Now().UnixNano()) * 1e-9
	}
	if err := work(); err != nil { // warm-up: page faults, allocations, code
		return 0, err
	}
	best := 0.0
	for range benchBatches {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n := 0
		t0, c0 := time.Now(), clock()
		for time.Since(t0) < batchTime {
			if err := work(); err != nil {
				return 0, err
			}
			n++
		}
		if dt := clock() - c0; dt > 0 {
			if r := float64(n) * units / dt; r > best {
				best = r
			}
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("microbenchmark: no usable timing")
	}
	return best, nil
}

func gemmRate(ctx context.Context, m, k, n int) (float64, error) {
	fill := func(size int) []float32 {
		v := make([]float32, size)
		for i := range v {
			v[i] = float32(i%13)*0.25 - 1.5
		}
		return v
	}
	a := tensor.New(tensor.WithShape(m, k), tensor.WithBacking(fill(m*k)))
	bm := tensor.New(tensor.WithShape(k, n), tensor.WithBacking(fill(k*n)))
	c := tensor.New(tensor.WithShape(m, n), tensor.Of(tensor.Float32))
	// gonum multiplies serially below 4 blocks of 64×64 outputs: 64×192 is one thread.
	oneThread := (m+63)/64*((n+63)/64) < 4
	return bestRate(ctx, 2*float64(m)*float64(k)*float64(n), oneThread, func() error {
		_, err := a.MatMul(bm, tensor.WithReuse(c))
		return err
	})
}

// copyRate measures memory copy bandwidth with the given number of goroutines, each
// copying its own 32 MiB buffer.
func copyRate(ctx context.Context, workers int) (float64, error) {
	const size = 32 << 20
	src := make([][]byte, workers)
	dst := make([][]byte, workers)
	for w := range workers {
		src[w] = make([]byte, size)
		dst[w] = make([]byte, size)
		for i := 0; i < size; i += 4096 {
			src[w][i] = byte(i)
		}
	}
	if workers == 1 {
		return bestRate(ctx, 2*size, true, func() error {
			copy(dst[0], src[0])
			return nil
		})
	}
	return bestRate(ctx, 2*size*float64(workers), false, func() error {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				copy(dst[w], src[w])
			}()
		}
		wg.Wait()
		return nil
	})
}

// clockChain runs n iterations of 16 dependent one-cycle integer operations and returns the
// result (so that the compiler keeps the chain).
//
//go:noinline
func clockChain(n int, a, b uint64) uint64 {
	x := a
	for range n {
		x += a
		x ^= b
		x += a
		x ^= b
		x += a
		x ^= b
		x += a
		x ^= b
		x += a
		x ^= b
		x += a
		x ^= b
		x += a
		x ^= b
		x += a
		x ^= b
	}
	return x
}

var clockSink uint64

// clockRate measures the clock of the core running this thread: one dependent add or xor
// retires per cycle, so operations per second of CPU time are cycles per second.
func clockRate(ctx context.Context) (float64, error) {
	const n = 1 << 18
	return bestRate(ctx, 16*n, true, func() error {
		clockSink += clockChain(n, clockSink|3, 5)
		return nil
	})
}

// Read sweep: working sets from readMin to readMax bytes, doubling; each timed in
// readBatches batches of readBatchTime (best batch kept).
const (
	readMin       = 1 << 20
	readMax       = 256 << 20
	readBatches   = 3
	readBatchTime = 30 * time.Millisecond
)

// readSweep measures one thread's read bandwidth over working sets from readMin to readMax
// bytes (see HostBench.Read). One buffer of readMax bytes serves every size (its prefix).
func readSweep(ctx context.Context) ([]profile.ReadPoint, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, readMax)
	for i := range buf {
		buf[i] = byte(i%251) + 1 // never 0: the scan for 0 reads the whole buffer
	}
	var out []profile.ReadPoint
	for size := readMin; size <= readMax; size *= 2 {
		b := buf[:size]
		scan := func() {
			if bytes.IndexByte(b, 0) >= 0 {
				panic("profile: read microbenchmark buffer holds a zero")
			}
		}
		scan() // warm-up: a set that fits stays in the caches
		best := 0.0
		for range readBatches {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			n := 0
			t0, c0 := time.Now(), ThreadCPU()
			for time.Since(t0) < readBatchTime || n < 2 {
				scan()
				n++
			}
			if dt := ThreadCPU() - c0; dt > 0 {
				best = math.Max(best, float64(n)*float64(size)/dt)
			}
		}
		if best == 0 {
			return nil, fmt.Errorf("read microbenchmark: no usable timing")
		}
		out = append(out, profile.ReadPoint{Bytes: int64(size), Rate: best})
	}
	return out, nil
}

// readSweepFact lists the read sweep, e.g. "1 MiB 82 GB/s, 2 MiB 80 GB/s, …".
func readSweepFact(r []profile.ReadPoint) string {
	var parts []string
	for _, p := range r {
		parts = append(parts, profile.FormatQuantity(float64(p.Bytes), profile.Bytes)+" "+profile.FormatQuantity(p.Rate, profile.Rate))
	}
	return "one thread reading a working set of " + strings.Join(parts, ", ")
}

// cpuModel reads the CPU's name from /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name", "Model", "cpu model":
				if v = strings.TrimSpace(v); v != "" {
					return v
				}
			}
		}
	}
	return runtime.GOARCH + " CPU"
}

// cpuMHz is the clock /proc/cpuinfo reports for the first CPU (0 if unknown).
func cpuMHz() float64 {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "cpu MHz" {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

func memTotal() (float64, bool) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseFloat(f[0], 64)
				return kb * 1024, err == nil && kb > 0
			}
		}
	}
	return 0, false
}

// isaFlags lists the instruction-set extensions that matter for inference kernels.
func isaFlags() []string {
	var out []string
	add := func(ok bool, name string) {
		if ok {
			out = append(out, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64", "386":
		add(cpu.X86.HasAVX, "avx")
		add(cpu.X86.HasAVX2, "avx2")
		add(cpu.X86.HasFMA, "fma")
		add(cpu.X86.HasAVXVNNI, "avx-vnni")
		add(cpu.X86.HasAVX512F, "avx512f")
		add(cpu.X86.HasAVX512BW, "avx512bw")
		add(cpu.X86.HasAVX512VNNI, "avx512-vnni")
		add(cpu.X86.HasAVX512BF16, "avx512-bf16")
		add(cpu.X86.HasAMXTile, "amx-tile")
		add(cpu.X86.HasAMXBF16, "amx-bf16")
		add(cpu.X86.HasAMXInt8, "amx-int8")
	case "arm64":
		add(cpu.ARM64.HasASIMD, "asimd")
		add(cpu.ARM64.HasASIMDHP, "asimd-fp16")
		add(cpu.ARM64.HasASIMDDP, "asimd-dotprod")
		add(cpu.ARM64.HasSVE, "sve")
	}
	return out
}

func hasFlag(h *profile.Host, f string) bool {
	for _, x := range h.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// flopsPerCycle is the nominal fp32 FLOP per cycle and core from the ISA: two FMA units of
// the widest vector width.
func flopsPerCycle(h *profile.Host) (float64, string) {
	switch {
	case hasFlag(h, "avx512f"):
		return 64, "2 × AVX-512 FMA"
	case hasFlag(h, "avx2") && hasFlag(h, "fma"):
		return 32, "2 × AVX2 FMA"
	case hasFlag(h, "asimd"):
		return 16, "2 × NEON FMA"
	}
	return 8, "SSE"
}

// vectorWidth is the fp32 lane count of the widest vectors the ISA flags promise.
func vectorWidth(h *profile.Host) int {
	switch {
	case hasFlag(h, "avx512f"):
		return 16
	case hasFlag(h, "avx2"), hasFlag(h, "avx"):
		return 8
	case hasFlag(h, "asimd"):
		return 4
	}
	return 4
}

// interp scales a one-thread and an all-core figure to t threads (linear in between).
func interp(one, all float64, t, cores int) float64 {
	if t <= 1 || cores <= 1 {
		return one
	}
	if t >= cores {
		return math.Max(all, one)
	}
	return one + (math.Max(all, one)-one)*float64(t-1)/float64(cores-1)
}

// Device describes the host CPU running with the given number of threads (0: all cores).
//
// The fp32 peak is the ISA's nominal rate, threads × clock × FLOP per cycle (two FMA units of
// the widest vectors), with the clock the dependent-add microbenchmark ran at (HostBench.Clock;
// /proc/cpuinfo's "cpu MHz" without it: a virtual machine reports its base clock there, 2096
// MHz on the reference machine whose cores run at 3.5 GHz, where ONNX Runtime's MLAS kernels
// reached 0.86–0.95 of the measured-clock peak on 256-row products). The gorgonia GEMM
// microbenchmark is recorded beside it, and stands in for the peak only when the clock is
// unknown: gonum's pure-Go kernels reach about a tenth of what the vector units do (on the
// reference machine 14 GFLOP/s per core), so as a peak it would make every CPU prediction ten
// times too slow before calibration. Memory bandwidth is the copy microbenchmark's; the read
// sweep gives ReadBandwidth (its largest working set), Cache and CacheBandwidth (see
// HostBench.Levels) and Reads, the weight rates of WeightRate.
func HostDevice(h *profile.Host, name string, threads int) profile.Device {
	if threads <= 0 || threads > h.Cores {
		threads = h.Cores
	}
	d := profile.Device{Name: name, Model: h.Model, Kind: profile.CPU, Threads: threads, Host: true, Memory: h.Memory,
		VectorWidth: vectorWidth(h)}
	d.Fact("cores", fmt.Sprintf("%d logical CPUs, figures for %d thread(s)", h.Cores, threads), profile.SourceHost)
	if len(h.Flags) > 0 {
		d.Fact("isa", strings.Join(h.Flags, " "), profile.SourceHost)
	}
	per, isa := flopsPerCycle(h)
	mhz := cpuMHz()
	var fp32 float64
	switch b := h.Bench; {
	case b != nil && b.Clock > 0:
		mhz = b.Clock / 1e6
		fp32 = float64(threads) * b.Clock * per
		d.Peak[profile.FP32] = fig(fp32, profile.SourceMeasured, fmt.Sprintf("%d thread(s) × %.0f MHz (measured: dependent adds; /proc/cpuinfo says %.0f) × %g FLOP/cycle (%s)",
			threads, mhz, cpuMHz(), per, isa))
	case mhz > 0:
		fp32 = float64(threads) * mhz * 1e6 * per
		d.Peak[profile.FP32] = fig(fp32, profile.SourceHost, fmt.Sprintf("%d thread(s) × %.0f MHz (/proc/cpuinfo) × %g FLOP/cycle (%s)", threads, mhz, per, isa))
	}
	if b := h.Bench; b != nil {
		gemm := interp(b.GEMM1, b.GEMMAll, threads, h.Cores)
		d.Fact("gemm microbenchmark", fmt.Sprintf("gorgonia/gonum f32: %s on 1 thread, %s on %d", profile.FormatQuantity(b.GEMM1, profile.FLOPRate),
			profile.FormatQuantity(b.GEMMAll, profile.FLOPRate), h.Cores), profile.SourceMeasured)
		if fp32 == 0 {
			fp32 = gemm
			d.Peak[profile.FP32] = fig(fp32, profile.SourceMeasured, "gorgonia/gonum f32 GEMM (clock unknown)")
		}
		d.Bandwidth = fig(interp(b.Copy1, b.CopyAll, threads, h.Cores), profile.SourceMeasured,
			fmt.Sprintf("copy: %s on 1 thread, %s on %d", profile.FormatQuantity(b.Copy1, profile.Rate), profile.FormatQuantity(b.CopyAll, profile.Rate), h.Cores))
		if l := b.Levels(); l.Memory > 0 {
			// Reads scale with threads as the copy does from memory; each core reads its
			// own share of the cache at the one-thread rate.
			scale := 1.0
			if b.Copy1 > 0 {
				scale = d.Bandwidth.Value / b.Copy1
			}
			d.ReadBandwidth = fig(l.Memory*scale, profile.SourceMeasured, fmt.Sprintf("read: %s on 1 thread over %s (weights streamed from memory)",
				profile.FormatQuantity(l.Memory, profile.Rate), profile.FormatQuantity(float64(b.Read[len(b.Read)-1].Bytes), profile.Bytes)))
			if l.CacheBytes > 0 {
				d.Cache = fig(l.CacheBytes, profile.SourceMeasured, fmt.Sprintf("largest working set read ≥ halfway between the memory's %s and the cache's %s",
					profile.FormatQuantity(l.Memory, profile.Rate), profile.FormatQuantity(l.Cache, profile.Rate)))
				d.CacheBandwidth = fig(l.Cache*float64(threads), profile.SourceMeasured, fmt.Sprintf("read: %s on 1 thread, best over 1 MiB–%s",
					profile.FormatQuantity(l.Cache, profile.Rate), profile.FormatQuantity(float64(b.Read[len(b.Read)-2].Bytes), profile.Bytes)))
			}
			// The sweep itself, for sizes between the levels: sets that fit in the cache
			// are read by every thread from its own share; larger ones scale as memory.
			for _, p := range b.Read {
				f := scale
				if float64(p.Bytes) <= l.CacheBytes {
					f = float64(threads)
				}
				d.Reads = append(d.Reads, profile.ReadPoint{Bytes: p.Bytes, Rate: p.Rate * f})
			}
			d.Fact("read sweep", readSweepFact(b.Read), profile.SourceMeasured)
		}
		how := "measured " + b.When.Format("2006-01-02")
		if h.Cached {
			how += ", cached in " + h.CacheAt
		}
		d.Fact("microbenchmarks", how, profile.SourceMeasured)
	} else {
		if fp32 == 0 {
			fp32 = float64(threads) * 2500e6 * per
			d.Peak[profile.FP32] = fig(fp32, profile.SourceDefault, fmt.Sprintf("%d thread(s) × 2.5 GHz (assumed) × %g FLOP/cycle (%s)", threads, per, isa))
		}
		bw := math.Min(10e9*float64(threads), 40e9)
		d.Bandwidth = fig(bw, profile.SourceDefault, "10 GB/s per thread up to 40 GB/s; not measured")
	}
	d.Peak[profile.TF32] = fig(fp32, profile.SourceDefault, "no TF32 on CPUs: the fp32 rate")
	d.Peak[profile.FP16] = fig(fp32, profile.SourceDefault, "ONNX Runtime's CPU provider computes fp16 in fp32")
	switch {
	case hasFlag(h, "amx-int8") && mhz > 0:
		d.Peak[profile.INT8] = fig(float64(threads)*mhz*1e6*2048, profile.SourceHost, "AMX-INT8: 2048 OP/cycle per core")
	case hasFlag(h, "avx512-vnni") || hasFlag(h, "avx-vnni"):
		d.Peak[profile.INT8] = fig(4*fp32, profile.SourceDefault, "VNNI: 4 int8 MACs per fp32 FMA lane")
	default:
		d.Peak[profile.INT8] = fig(2*fp32, profile.SourceDefault, "no VNNI: about 2× the fp32 rate")
	}
	applyKindDefaults(&d)
	return d
}
