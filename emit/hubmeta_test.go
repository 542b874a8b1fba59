package emit

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// TestStageProvenance: every stage file keeps the source's metadata (producer, doc strings,
// domain, model_version, custom metadata_props, node and graph annotations) and adds
// onnxpart's (source file and sha256, stage index and count), so that a stage found on its
// own can be traced back to its model.
func TestStageProvenance(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "models", "resnet50_small.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	var src onnxpb.ModelProto
	if err := proto.Unmarshal(data, &src); err != nil {
		t.Fatal(err)
	}
	src.ProducerName, src.ProducerVersion = proto.String("hub-exporter"), proto.String("2.1")
	src.DocString = proto.String("ResNet-50, small widths")
	src.Domain, src.ModelVersion = proto.String("org.example.vision"), proto.Int64(7)
	src.MetadataProps = []*onnxpb.StringStringEntryProto{
		{Key: proto.String("license"), Value: proto.String("Apache-2.0")},
		{Key: proto.String("onnxpart.stage"), Value: proto.String("stale")}, // from an earlier split: replaced
	}
	src.Graph.DocString = proto.String("main graph")
	src.Graph.MetadataProps = []*onnxpb.StringStringEntryProto{{Key: proto.String("graph_key"), Value: proto.String("g")}}
	last := src.Graph.Node[len(src.Graph.Node)-1]
	last.DocString = proto.String("classifier")
	m := testmodel.LoadPath(t, testmodel.WriteModel(t, &src))

	stage, err := EqualFLOPs(m.Graph, 3)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	man, err := Write(m, &Assignment{Stage: stage}, dir, Options{Producer: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range man.Stages {
		mp := stageModelOf(t, dir, st)
		md := testmodel.Metadata(mp)
		want := map[string]string{
			"license":                          "Apache-2.0",
			"onnxpart.source_model":            "model.onnx",
			"onnxpart.source_sha256":           m.SHA256,
			"onnxpart.source_producer_name":    "hub-exporter",
			"onnxpart.source_producer_version": "2.1",
			"onnxpart.stage":                   strconv.Itoa(st.Index),
			"onnxpart.stages":                  "3",
		}
		for k, v := range want {
			if md[k] != v {
				t.Errorf("stage %d: metadata %s = %q, want %q", st.Index, k, md[k], v)
			}
		}
		if len(mp.MetadataProps) != len(want) {
			t.Errorf("stage %d: %d metadata entries, want %d (each key once): %v", st.Index, len(mp.MetadataProps), len(want), md)
		}
		if mp.GetProducerName() != "onnxpart" || mp.GetProducerVersion() != "1.2.3" {
			t.Errorf("stage %d: producer %q %q", st.Index, mp.GetProducerName(), mp.GetProducerVersion())
		}
		if mp.GetDocString() != "ResNet-50, small widths" || mp.GetDomain() != "org.example.vision" || mp.GetModelVersion() != 7 {
			t.Errorf("stage %d: doc %q, domain %q, model_version %d", st.Index, mp.GetDocString(), mp.GetDomain(), mp.GetModelVersion())
		}
		if mp.Graph.GetDocString() != "main graph" || len(mp.Graph.MetadataProps) != 1 || mp.Graph.MetadataProps[0].GetKey() != "graph_key" {
			t.Errorf("stage %d: graph doc %q, metadata %v", st.Index, mp.Graph.GetDocString(), mp.Graph.MetadataProps)
		}
		if st.Index == len(man.Stages)-1 {
			n := mp.Graph.Node[len(mp.Graph.Node)-1]
			if n.GetName() != last.GetName() || n.GetDocString() != "classifier" {
				t.Errorf("last stage: last node %q has doc %q", n.GetName(), n.GetDocString())
			}
		}
	}
	// The same entries in the same order every time (byte-identical stage files).
	first := stageModelOf(t, dir, man.Stages[0]).MetadataProps
	var keys []string
	for _, kv := range first {
		keys = append(keys, kv.GetKey())
	}
	wantKeys := []string{"license", "onnxpart.stage", "onnxpart.source_model", "onnxpart.source_sha256", "onnxpart.stages",
		"onnxpart.source_producer_name", "onnxpart.source_producer_version"}
	if len(keys) != len(wantKeys) {
		t.Fatalf("metadata keys %v, want %v", keys, wantKeys)
	}
	for i := range keys {
		if keys[i] != wantKeys[i] {
			t.Fatalf("metadata keys %v, want %v", keys, wantKeys)
		}
	}
}

// TestStageProvenanceWithoutProducer: a source without producer fields adds no empty
// entries.
func TestStageProvenanceWithoutProducer(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "models", "resnet50_small.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	var src onnxpb.ModelProto
	if err := proto.Unmarshal(data, &src); err != nil {
		t.Fatal(err)
	}
	src.ProducerName, src.ProducerVersion = nil, nil
	m := testmodel.LoadPath(t, testmodel.WriteModel(t, &src))
	stage, err := EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	man, err := Write(m, &Assignment{Stage: stage}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := testmodel.Metadata(stageModelOf(t, dir, man.Stages[1]))
	for _, k := range []string{"onnxpart.source_producer_name", "onnxpart.source_producer_version"} {
		if v, ok := md[k]; ok {
			t.Errorf("%s = %q for a source without a producer", k, v)
		}
	}
	if md["onnxpart.stage"] != "1" || md["onnxpart.source_sha256"] != m.SHA256 {
		t.Errorf("metadata %v", md)
	}
}
