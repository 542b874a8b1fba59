package genai

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestReadModelConfig: the model builder's genai_config.json beside the model gives the
// figures and its past_present_share_buffer; a config.json's figures nested under
// text_config are read; genai_config.json's values come first, config.json fills the rest.
func TestReadModelConfig(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.onnx")
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// config.json alone, figures under text_config (a multimodal model's)
	write("config.json", `{"architectures": ["X"], "eos_token_id": [5, 6], "text_config": {"num_attention_heads": 16,
		"num_key_value_heads": 2, "head_dim": 256, "max_position_embeddings": 262144, "bos_token_id": 2, "hidden_size": 1024, "vocab_size": 248320}}`)
	h, from, err := readHFConfig(model, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"num_attention_heads": 16, "num_key_value_heads": 2, "head_size": 256, "context_length": 262144,
		"bos_token_id": 2, "hidden_size": 1024, "vocab_size": 248320}
	if !reflect.DeepEqual(h.vals, want) || !reflect.DeepEqual(h.eos, Tokens{5, 6}) || h.share != nil || filepath.Base(from) != "config.json" {
		t.Errorf("text_config: %v eos %v share %v from %q", h.vals, h.eos, h.share, from)
	}
	// the builder's genai_config.json beside it wins where both say
	write("genai_config.json", `{"model": {"bos_token_id": 1, "context_length": 512, "eos_token_id": 2, "pad_token_id": 0,
		"decoder": {"head_size": 32, "hidden_size": 256, "num_attention_heads": 8, "num_hidden_layers": 4, "num_key_value_heads": 2},
		"type": "llama", "vocab_size": 1000}, "search": {"past_present_share_buffer": true, "max_length": 512}}`)
	h, from, err = readHFConfig(model, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]int64{"num_attention_heads": 8, "num_key_value_heads": 2, "head_size": 32, "context_length": 512,
		"bos_token_id": 1, "pad_token_id": 0, "hidden_size": 256, "vocab_size": 1000, "num_hidden_layers": 4}
	if !reflect.DeepEqual(h.vals, want) || !reflect.DeepEqual(h.eos, Tokens{2}) || h.share == nil || !*h.share {
		t.Errorf("genai_config.json: %v eos %v share %v", h.vals, h.eos, h.share)
	}
	if from != filepath.Join(dir, "genai_config.json")+", "+filepath.Join(dir, "config.json") {
		t.Errorf("read %q", from)
	}
	// given explicitly: that file only
	h, _, err = readHFConfig(model, filepath.Join(dir, "genai_config.json"), nil)
	if err != nil || h.vals["context_length"] != 512 {
		t.Errorf("given: %v %v", h.vals, err)
	}
}
