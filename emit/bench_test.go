package emit

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/internal/testmodel"
)

// BenchmarkWriteBERT8 writes bert_base_like_small.onnx (1212 nodes, 3.0 MB) as 8 equal-FLOP
// stages: layout, stage models, manifest, fsync and rename. Besides time and allocations
// it reports the peak live heap during the write (sampled every 200 µs, above the heap
// in use before it) as a ratio to the model file's size.
func BenchmarkWriteBERT8(b *testing.B) {
	c := testmodel.Corpus(b, "bert_base_like_small.onnx")
	m := testmodel.Load(b, c)
	stage, err := EqualFLOPs(m.Graph, 8)
	if err != nil {
		b.Fatal(err)
	}
	parent := b.TempDir()
	var peak atomic.Uint64
	var base uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base = ms.HeapInuse
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			runtime.ReadMemStats(&s)
			if s.HeapInuse > peak.Load() {
				peak.Store(s.HeapInuse)
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		dir := filepath.Join(parent, "out"+string(rune('a'+i%26)))
		i++
		os.RemoveAll(dir)
		if _, err := Write(m, &Assignment{Stage: stage}, dir, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	extra := float64(peak.Load()) - float64(base)
	b.ReportMetric(float64(m.FileSize)/1e6, "file-MB")
	b.ReportMetric(max(extra, 0)/float64(m.FileSize), "peak-extra-heap/file")
	b.ReportMetric(float64(peak.Load())/float64(m.FileSize), "peak-heap/file")
}
