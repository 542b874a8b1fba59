package ingest

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/onnxpb"
)

// BenchmarkLoad measures the whole ingest (decode, graph, shape inference, costs) per corpus
// model, reporting time per node.
func BenchmarkLoad(b *testing.B) {
	for _, p := range corpus(b) {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(p), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var nodes int
			for i := 0; i < b.N; i++ {
				m, err := loadBytes(p, data, Options{Dims: dimsFor(p)})
				if err != nil {
					b.Fatal(err)
				}
				nodes = len(m.Graph.Nodes)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nodes), "ns/node")
		})
	}
}

// BenchmarkInspectVsUnmarshal compares inspect's work on the BERT-like model (load and
// summarise) with a bare protobuf unmarshal of the same bytes; the target is a ratio
// under 3.
func BenchmarkInspectVsUnmarshal(b *testing.B) {
	p := filepath.Join(corpusDir, "bert_base_like_small.onnx")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Skip("corpus missing")
	}
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var m onnxpb.ModelProto
			if err := proto.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("inspect", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			m, err := loadBytes(p, data, Options{})
			if err != nil {
				b.Fatal(err)
			}
			m.Summarize(false)
		}
	})
}
