package ingest

import (
	"strings"
	"testing"
)

// TestRecurrentShapes covers what the ONNX Runtime comparison cannot (ORT rejects these
// models): hidden_size taken from R when the attribute is absent, batch from initial_h with
// layout 1 ([batch, dirs, hidden]), and an X that is not 3-D reported as a shape error (ORT:
// "Input X must have 3 dimensions"; silero_vad v5's 8 kHz branch at a 16 kHz input size).
func TestRecurrentShapes(t *testing.T) {
	cases := []struct {
		name        string
		build       func(m *ocModel)
		want        string // the LSTM's output shapes
		shapeErrors string
	}{
		{"NoHiddenSizeAttr", func(m *ocModel) {
			m.opN("LSTM", ins(m.in(f32, 5, 2, 3), m.weight(f32, 1, 16, 3), m.weight(f32, 1, 16, 4)), 3)
		}, "[5,1,2,4] [1,2,4] [1,2,4]", ""},
		{"Layout1InitialH", func(m *ocModel) {
			x := m.in(f32, "B", 5, 3)
			m.opN("LSTM", ins(x, m.weight(f32, 2, 16, 3), m.weight(f32, 2, 16, 4), "", "", m.weight(f32, 2, 2, 4)), 3,
				aI("hidden_size", 4), aS("direction", "bidirectional"), aI("layout", 1))
		}, "[2,5,2,4] [2,2,4] [2,2,4]", ""},
		{"XRank4", func(m *ocModel) {
			m.opN("LSTM", ins(m.in(f32, 1, 5, 2, 3), m.weight(f32, 1, 16, 3), m.weight(f32, 1, 16, 4)), 3, aI("hidden_size", 4))
		}, "unknown unknown unknown", "X must be 3-D, got shape [1,5,2,3]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newOCModel(14)
			tc.build(m)
			md := loadOC(t, m)
			var got []string
			for _, o := range md.Graph.Nodes[len(md.Graph.Nodes)-1].Outputs {
				got = append(got, md.Graph.Tensors[o].Shape.String())
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("LSTM outputs %v, want %s", got, tc.want)
			}
			errs := strings.Join(md.ShapeErrors, "\n")
			if tc.shapeErrors == "" && errs != "" || !strings.Contains(errs, tc.shapeErrors) {
				t.Errorf("shape errors %q, want %q", md.ShapeErrors, tc.shapeErrors)
			}
		})
	}
}
