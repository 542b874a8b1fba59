package profile

import (
	"math"
	"time"
)

// HostBench holds the results of the host microbenchmarks. Rates are best-of-several
// batches, so they approach the machine's attainable peak rather than its average.
type HostBench struct {
	Version int    `json:"version"`
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	Arch    string `json:"goarch"`
	// GEMM1 and GEMMAll are float32 matrix-multiply rates (FLOP/s) of gorgonia tensor's
	// MatMul (gonum BLAS) on one thread (64×1024·1024×192, below gonum's parallel
	// threshold; timed by the thread's CPU time) and on all cores (256×256·256×256, wall
	// time).
	GEMM1   float64 `json:"gemm1_flops"`
	GEMMAll float64 `json:"gemm_all_flops"`
	// Copy1 and CopyAll are memory copy rates (bytes read plus bytes written per second) of
	// one thread (CPU time) and of one goroutine per core (wall time), each copying 32 MiB.
	Copy1   float64 `json:"copy1_bytes_per_s"`
	CopyAll float64 `json:"copy_all_bytes_per_s"`
	// Clock is the core clock while one thread runs, Hz: a chain of dependent one-cycle
	// integer operations (add, xor), timed by the thread's CPU time. It is the clock the
	// vector units run at under load (turbo included), which /proc/cpuinfo's "cpu MHz" often
	// is not (a virtual machine reports the base clock there).
	Clock float64 `json:"clock_hz"`
	// Read is one thread's read bandwidth (bytes read per second of the thread's CPU time)
	// over working sets from 1 MiB to 256 MiB, doubling: a vectorised scan of the buffer
	// (bytes.IndexByte for a byte it does not hold), repeated. Small sets stay in the caches
	// between scans, large ones stream from memory: the curve gives the last-level cache's
	// capacity and read rate and the memory's (see Levels). Nil in caches of older versions.
	Read    []ReadPoint `json:"read,omitempty"`
	Seconds float64     `json:"seconds"`
	When    time.Time   `json:"when"`
}

// ReadPoint is the read bandwidth measured over a working set of Bytes bytes.
type ReadPoint struct {
	Bytes int64   `json:"bytes"`
	Rate  float64 `json:"bytes_per_s"`
}

// MemoryLevels are the read rates a thread gets from the last-level cache and from memory,
// derived from the read sweep: Memory is the rate over the largest working set; Cache the
// best rate over the others; CacheBytes the largest working set still read at least halfway
// from Memory's rate to Cache's (0, with Cache 0, when the sweep shows no cache level: no set
// read 1.25 times faster than the largest).
type MemoryLevels struct {
	Cache, CacheBytes, Memory float64
}

// Levels derives the memory levels from the read sweep (zero without one).
func (b *HostBench) Levels() MemoryLevels {
	if b == nil || len(b.Read) < 2 {
		return MemoryLevels{}
	}
	last := b.Read[len(b.Read)-1]
	l := MemoryLevels{Memory: last.Rate}
	for _, p := range b.Read[:len(b.Read)-1] {
		l.Cache = math.Max(l.Cache, p.Rate)
	}
	if l.Cache < 1.25*l.Memory {
		return MemoryLevels{Memory: last.Rate}
	}
	mid := (l.Cache + l.Memory) / 2
	for _, p := range b.Read[:len(b.Read)-1] {
		if p.Rate >= mid {
			l.CacheBytes = float64(p.Bytes)
		}
	}
	return l
}
