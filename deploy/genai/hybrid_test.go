package genai

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/genaigen"
)

// hybridModel writes the genaigen hybrid preset (24 layers: three linear-attention layers
// with conv and recurrent state, then a GroupQueryAttention layer with a KV cache,
// repeated) and loads it.
func hybridModel(t *testing.T) (string, *ingest.Model) {
	t.Helper()
	path, err := genaigen.Write(t.TempDir(), genaigen.Hybrid)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ingest.Load(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return path, m
}

// genaiNotes are the manifest's notes about genai_config.json.
func genaiNotes(notes []string) []string {
	var out []string
	for _, n := range notes {
		if strings.HasPrefix(n, genaiNote) {
			out = append(out, n)
		}
	}
	return out
}

// A hybrid stack: the KV cache on every fourth layer is genai's KV cache (its templates,
// genai finds the layers by name), layer_types and the conv templates are written, and the
// 36 conv/recurrent state pairs genai's pipeline does not bind under their names get one
// note, not one per input and not "no past key/value inputs". The file passes the schema
// and genai's field check (writeGenAIDir).
func TestGenAIHybrid(t *testing.T) {
	path, m := hybridModel(t)
	half := make([]int, len(m.Graph.Nodes))
	for i := range half {
		if i >= len(half)/2 {
			half[i] = 1
		}
	}
	devs := []emit.Device{{Name: "cpu0"}, {Name: "cpu1"}}
	man, _, raw := writeGenAIDir(t, path, half, devs, &Options{})
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	d := cfg.Model.Decoder
	c := genaigen.Hybrid
	if d.NumHiddenLayers != int64(c.Layers) || d.NumKeyValueHeads != int64(c.KVHeads) || d.HeadSize != int64(c.HeadSize()) ||
		d.NumAttentionHeads != int64(c.Heads) || d.HiddenSize != int64(c.Hidden) {
		t.Errorf("decoder sizes: %+v", d)
	}
	if d.Inputs.PastKeyNames != "past_key_values.%d.key" || d.Outputs.PresentValueNames != "present.%d.value" ||
		d.Inputs.PastConvNames != "past_conv.%d" || d.Outputs.PresentConvNames != "present_conv.%d" {
		t.Errorf("names: %+v %+v", d.Inputs, d.Outputs)
	}
	if len(d.LayerTypes) != c.Layers {
		t.Fatalf("layer_types %q, want %d", d.LayerTypes, c.Layers)
	}
	for i, lt := range d.LayerTypes {
		want := "full_attention"
		if c.Linear(i) {
			want = "linear_attention"
		}
		if lt != want {
			t.Errorf("layer_types[%d] %q, want %q", i, lt, want)
		}
	}
	notes := genaiNotes(diag.NoteStrings(man.Notes))
	if len(notes) != 1 || !strings.Contains(notes[0], "36 state pairs") || !strings.Contains(notes[0], "past_recurrent.%d → present_recurrent.%d") {
		t.Errorf("want one note of the 36 state pairs, got %d: %q", len(notes), notes)
	}
	for _, n := range notes {
		if strings.Contains(n, "no past key/value") || strings.Contains(n, "is not one genai feeds") || strings.Contains(n, "no logits") {
			t.Errorf("contradicting note: %s", n)
		}
	}
	if cfg.Model.ContextLength != int64(c.Context) || !cfg.Search.PastPresentShareBuffer {
		t.Errorf("the builder's figures are not kept: context %d, share %v", cfg.Model.ContextLength, cfg.Search.PastPresentShareBuffer)
	}
}

// State named as genai's decoder-pipeline derives it from past_key_names
// (past_key_values.%d.conv_state, .recurrent_state) is genai's to bind: no note, and the
// names count as genai's. A model with the state but no KV cache gets one note that says
// so, never also "no past key/value inputs".
func TestGenAIHybridDerivedNamesAndNoKV(t *testing.T) {
	_, m := hybridModel(t)
	g := m.Graph
	for i := range g.Tensors {
		n := &g.Tensors[i].Name
		for from, to := range map[string]string{"past_conv.": "past_key_values.%s.conv_state", "past_recurrent.": "past_key_values.%s.recurrent_state",
			"present_conv.": "present.%s.conv_state", "present_recurrent.": "present.%s.recurrent_state"} {
			if l, ok := strings.CutPrefix(*n, from); ok && !strings.Contains(l, ".") {
				*n = fmt.Sprintf(to, l)
			}
		}
	}
	cfg, notes, err := genaiConfig(m, &emit.Manifest{}, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Model.Decoder.LayerTypes) != 24 || cfg.Model.Decoder.Inputs.PastConvNames != "past_key_values.%d.conv_state" {
		t.Errorf("decoder: %+v", cfg.Model.Decoder)
	}
	for _, n := range diag.NoteStrings(notes) {
		if strings.Contains(n, "state") || strings.Contains(n, "genai feeds") {
			t.Errorf("note about state genai binds: %s", n)
		}
	}
	gio := genaiNames(g)
	if !slices.Contains(gio.kv, "past_key_values.0.recurrent_state") || !slices.Contains(gio.kv, "present.22.conv_state") {
		t.Errorf("derived state names are not genai's: %d names", len(gio.kv))
	}

	// No KV cache: rename it away.
	_, m = hybridModel(t)
	g = m.Graph
	for i := range g.Tensors {
		n := &g.Tensors[i].Name
		*n = strings.NewReplacer("past_key_values.", "cache_in_", "present.", "cache_out_", ".key", "_k", ".value", "_v").Replace(*n)
	}
	_, notes, err = genaiConfig(m, &emit.Manifest{}, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	var state int
	for _, n := range diag.NoteStrings(notes) {
		if strings.Contains(n, "no past key/value inputs (") {
			t.Errorf("contradicting note: %s", n)
		}
		if strings.Contains(n, "state pairs") {
			state++
		}
	}
	if state != 1 || len(notes) > 3 {
		t.Errorf("want one note of the state, at most 3 in all, got %d: %q", len(notes), notes)
	}
}
