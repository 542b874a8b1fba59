package verify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// TestCheckCatches: each defect, slipped into an otherwise valid directory (hashes
// refreshed), is reported.
func TestCheckCatches(t *testing.T) {
	c := testmodel.Corpus(t, "googlenet_small.onnx")
	for _, tc := range []struct {
		name string
		edit func(*onnxpb.ModelProto)
		want string
	}{
		{"node order", func(mp *onnxpb.ModelProto) {
			n := mp.Graph.Node
			n[0], n[len(n)-1] = n[len(n)-1], n[0]
		}, "output of an earlier node"},
		{"missing weight", func(mp *onnxpb.ModelProto) { mp.Graph.Initializer = mp.Graph.Initializer[1:] }, "neither a stage input, a weight"},
		{"unused weight", func(mp *onnxpb.ModelProto) {
			mp.Graph.Initializer = append(mp.Graph.Initializer, testmodel.FloatTensor("stray", []int64{1}, 1))
		}, `weight "stray" is not used`},
		{"untyped input", func(mp *onnxpb.ModelProto) {
			mp.Graph.Input[0].Type.GetTensorType().Shape = nil
		}, "no shape"},
		{"dangling output", func(mp *onnxpb.ModelProto) {
			mp.Graph.Output = append(mp.Graph.Output, testmodel.VInfo("ghost", 1, 1))
		}, `output "ghost" is not produced`},
		{"defined twice", func(mp *onnxpb.ModelProto) {
			mp.Graph.Node = append(mp.Graph.Node, proto.Clone(mp.Graph.Node[0]).(*onnxpb.NodeProto))
		}, "is defined twice"},
		{"capture missing", func(mp *onnxpb.ModelProto) {
			body := &onnxpb.GraphProto{Node: []*onnxpb.NodeProto{testmodel.Node("Identity", "i", []string{"nowhere"}, []string{"o"})},
				Output: []*onnxpb.ValueInfoProto{testmodel.VInfo("o", 1)}}
			mp.Graph.Node = append(mp.Graph.Node, testmodel.Node("If", "if", []string{mp.Graph.Input[0].GetName()}, []string{"if_out"},
				testmodel.GraphAttr("then_branch", body), testmodel.GraphAttr("else_branch", body)))
		}, `reads "nowhere"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := writeSplit(t, c, 3)
			if _, err := Check(dir); err != nil {
				t.Fatalf("before the edit: %v", err)
			}
			rewriteStage(t, dir, 1, tc.edit)
			_, err := Check(dir)
			var ce *diag.Error
			if !errors.As(err, &ce) || ce.Kind != diag.KindInput || ce.Subject.Kind != diag.File || !strings.Contains(strings.Join(ce.Notes, "\n"), tc.want) {
				t.Errorf("got %v, want a problem with %q", err, tc.want)
			}
		})
	}
	// Manifest-level defects.
	dir, man := writeSplit(t, c, 3)
	man.Stages[2].Inputs[0].Stage = 7
	js, _ := man.MarshalIndent()
	os.WriteFile(filepath.Join(dir, emit.ManifestFile), js, 0o644)
	if _, err := Check(dir); err == nil || !strings.Contains(err.Error(), "but the manifest says stage 7") {
		t.Errorf("wrong producer stage: %v", err)
	}
	os.Remove(filepath.Join(dir, "stage1.onnx"))
	if _, err := Check(dir); err == nil || !strings.Contains(err.Error(), "stage1.onnx") {
		t.Errorf("missing stage file: %v", err)
	}
}
