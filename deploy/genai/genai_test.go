package genai

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/emit/schema"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// genaiFields are the fields onnxruntime-genai's parser accepts, per object of
// genai_config.json, as read in microsoft/onnxruntime-genai at commit a0c04eb1313b
// (src/config.cpp; the pipeline decoder came with f81b6eb04, September 2024). Its parser
// throws on a field it does not know (JSON::unknown_value_error) everywhere but at the top
// level, so a misspelt field fails the load; genaiFieldErrors fails on any field not listed.
//
//	/                     Root_Element, config.cpp:1931: objects model (1939), search (1940)
//	/model                Model_Element, config.cpp:1299: type (1303), vocab_size (1307),
//	                      context_length (1309, must be > 0), pad_token_id (1313), eos_token_id
//	                      (1315, a number, or an array at 1381), bos_token_id (1317), object
//	                      decoder (1392)
//	/model/decoder        Decoder_Element, config.cpp:680: filename, hidden_size,
//	                      num_attention_heads, num_hidden_layers, num_key_value_heads, head_size;
//	                      objects session_options (704), inputs (712), outputs (715); array
//	                      pipeline (731)
//	…/decoder/inputs      DecoderInputs_Element, config.cpp:314: input_ids, inputs_embeds,
//	                      attention_mask, position_ids, past_key_names, past_value_names, …
//	…/decoder/outputs     DecoderOutputs_Element, config.cpp:385: logits, present_key_names,
//	                      present_value_names, …
//	…/decoder/pipeline    Pipeline_Element, config.cpp:582, and PipelineModelObject_Element, 567:
//	                      an array of objects whose keys are model ids
//	…/pipeline/*/ID       PipelineModel_Element, config.cpp:511: filename, run_on_prompt,
//	                      run_on_token_gen, is_lm_head, inherit_session_options,
//	                      reset_session_idx; objects session_options, run_options,
//	                      output_names_forwarder (543); arrays inputs, outputs (550)
//	…/session_options     SessionOptions_Element, config.cpp:198: log_id, enable_profiling,
//	                      intra_op_num_threads, …, array provider_options (229) of
//	                      {provider: {option: string}} (ProviderOptions*_Element, 124–182)
//	/search               Search_Element, config.cpp:1497: min_length, max_length, batch_size,
//	                      num_beams, num_return_sequences, top_k, top_p, temperature,
//	                      repetition_penalty, length_penalty, no_repeat_ngram_size,
//	                      diversity_penalty, random_seed, do_sample, past_present_share_buffer,
//	                      early_stopping
//
// The hybrid fields (LFM2): layer_types (an array, Decoder_Element::OnArray) and
// conv_cache_size in /model/decoder, past_conv_names and present_conv_names in its inputs
// and outputs, as read at microsoft/onnxruntime-genai's snapshot of August 2026
// (src/config.cpp:696, 734, 362, 401; used by src/models/kv_cache.cpp's LFM2Cache).
//
// The model type "decoder-pipeline" is src/models/model_type.h:72 (ModelType::IsPipe),
// which src/models/model.cpp:1154 makes a DecoderOnlyPipelineModel.
var genaiFields = map[string][]string{
	"/": {"model", "search"},
	"/model": {"type", "vocab_size", "context_length", "pad_token_id", "eos_token_id", "bos_token_id", "decoder",
		"tokenizer_dir", "decoder_start_token_id", "sep_token_id"},
	"/model/decoder": {"filename", "hidden_size", "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "head_size",
		"session_options", "run_options", "inputs", "outputs", "pipeline", "sliding_window", "layer_types", "conv_cache_size"},
	"/model/decoder/inputs": {"input_ids", "inputs_embeds", "attention_mask", "position_ids", "past_key_names", "past_value_names",
		"past_names", "past_sequence_length", "current_sequence_length", "total_sequence_length", "past_conv_names"},
	"/model/decoder/outputs": {"logits", "present_key_names", "present_value_names", "present_names", "present_conv_names"},
	"pipeline model": {"filename", "run_on_prompt", "run_on_token_gen", "is_lm_head", "inherit_session_options", "reset_session_idx",
		"session_options", "run_options", "output_names_forwarder", "inputs", "outputs"},
	"session options": {"log_id", "enable_profiling", "intra_op_num_threads", "inter_op_num_threads", "log_severity_level",
		"log_verbosity_level", "enable_cpu_mem_arena", "enable_mem_pattern", "graph_optimization_level", "custom_ops_library",
		"provider_options"},
	"/search": {"min_length", "max_length", "batch_size", "num_beams", "num_return_sequences", "top_k", "top_p", "temperature",
		"repetition_penalty", "length_penalty", "no_repeat_ngram_size", "diversity_penalty", "random_seed", "do_sample",
		"past_present_share_buffer", "early_stopping"},
}

// checkGenAIFields fails on every field of doc, a decoded genai_config.json, that genai's
// parser does not accept where it stands.
func checkGenAIFields(t *testing.T, doc map[string]any) {
	t.Helper()
	for _, e := range genaiFieldErrors(doc) {
		t.Error(e)
	}
}

// genaiFieldErrors lists the fields of doc that genai's parser does not accept where they
// stand, and the values of a kind it does not read there.
func genaiFieldErrors(doc map[string]any) []string {
	var errs []string
	check := func(where, kind string, obj map[string]any) {
		for k := range obj {
			if !slices.Contains(genaiFields[kind], k) {
				errs = append(errs, fmt.Sprintf("%s: genai's parser has no field %q", where, k))
			}
		}
	}
	object := func(where string, v any) map[string]any {
		o, ok := v.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Sprintf("%s is %T, want an object", where, v))
		}
		return o
	}
	check("/", "/", doc)
	model := object("/model", doc["model"])
	check("/model", "/model", model)
	dec := object("/model/decoder", model["decoder"])
	check("/model/decoder", "/model/decoder", dec)
	check("/model/decoder/inputs", "/model/decoder/inputs", object("/model/decoder/inputs", dec["inputs"]))
	check("/model/decoder/outputs", "/model/decoder/outputs", object("/model/decoder/outputs", dec["outputs"]))
	sessionOptions := func(where string, v any) {
		so := object(where, v)
		check(where, "session options", so)
		pos, ok := so["provider_options"].([]any)
		if !ok {
			errs = append(errs, fmt.Sprintf("%s/provider_options is %T, want an array", where, so["provider_options"]))
		}
		for i, po := range pos {
			for name, opts := range object(fmt.Sprintf("%s/provider_options/%d", where, i), po) {
				for k, v := range object(fmt.Sprintf("%s/provider_options/%d/%s", where, i, name), opts) {
					if _, ok := v.(string); !ok {
						errs = append(errs, fmt.Sprintf("%s provider option %s: %T, genai reads strings", where, k, v))
					}
				}
			}
		}
	}
	sessionOptions("/model/decoder/session_options", dec["session_options"])
	pipe, ok := dec["pipeline"].([]any)
	if !ok {
		errs = append(errs, fmt.Sprintf("/model/decoder/pipeline is %T, want an array", dec["pipeline"]))
	}
	for i, el := range pipe {
		for id, pm := range object(fmt.Sprintf("/model/decoder/pipeline/%d", i), el) {
			where := fmt.Sprintf("/model/decoder/pipeline/%d/%s", i, id)
			o := object(where, pm)
			check(where, "pipeline model", o)
			if so, ok := o["session_options"]; ok {
				sessionOptions(where+"/session_options", so)
			}
		}
	}
	check("/search", "/search", object("/search", doc["search"]))
	return errs
}

// The field check itself catches a misspelt field at any depth, and the object form of
// the pipeline, which onnxpart does not write.
func TestGenAIFieldCheckCatchesMisspelling(t *testing.T) {
	good := `{"model": {"type": "decoder-pipeline", "decoder": {"session_options": {"provider_options": []},
		"inputs": {}, "outputs": {}, "pipeline": [{"stage0": {"filename": "stage0.onnx", "inputs": [], "outputs": [],
		"session_options": {"provider_options": [{"cuda": {"device_id": "0"}}]}, "run_on_prompt": true, "run_on_token_gen": true}}]}},
		"search": {"max_length": 8}}`
	var doc map[string]any
	if err := json.Unmarshal([]byte(good), &doc); err != nil {
		t.Fatal(err)
	}
	checkGenAIFields(t, doc)
	for _, bad := range []struct{ from, to string }{
		{`"run_on_token_gen"`, `"run_on_tokengen"`},
		{`"provider_options": []`, `"providers": []`},
		{`"max_length"`, `"max_len"`},
		{`"inputs": {}`, `"input": {}`},
		{`"device_id": "0"`, `"device_id": 0`},
		{`"type"`, `"model_type"`},
		{`"pipeline": [{"stage0": {`, `"pipeline": {"stage0": {`},
	} {
		text := strings.Replace(good, bad.from, bad.to, 1)
		if strings.HasPrefix(bad.to, `"pipeline": {`) {
			text = strings.Replace(text, `}}]}}`, `}}}}`, 1)
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(text), &d); err != nil {
			t.Fatal(err)
		}
		if len(genaiFieldErrors(d)) == 0 {
			t.Errorf("%s → %s: the check passed", bad.from, bad.to)
		}
	}
}

func genaiIntsAttr(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func genaiIntAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func genaiInt64s(name string, v ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: proto.String(name), Dims: []int64{int64(len(v))}, DataType: proto.Int32(int32(graph.Int64)), Int64Data: v}
}

// decoderLM writes a decoder shaped like a transformers export into its own directory:
// input_ids → token embedding [vocab 32, hidden 16] → per layer, queries reshaped to
// [batch, seq, 4 heads, 4], keys and values to [batch, seq, 2 KV heads, 4] and appended to
// past_key_values.<l>.key/value (present.<l>.key/value) → logits scaled by the attention
// mask. It returns the path and, per node, its layer (0 for the embedding, layers for the
// head), for assignments.
func decoderLM(t testing.TB, layers int) (string, []int) {
	const vocab, hidden, heads, kvHeads, head = 32, 16, 4, 2, 4
	w := func(name string, r, c int) *onnxpb.TensorProto {
		v := make([]float32, r*c)
		for i := range v {
			v[i] = float32((i*7+len(name))%11)/11 - 0.5
		}
		return testmodel.FloatTensor(name, []int64{int64(r), int64(c)}, v...)
	}
	g := &onnxpb.GraphProto{Name: proto.String("lm"),
		Input: []*onnxpb.ValueInfoProto{testmodel.VInfo("input_ids", graph.Int64, "batch", "seq"), testmodel.VInfo("attention_mask", graph.Int64, "batch", "total")},
		Initializer: []*onnxpb.TensorProto{w("model.embed_tokens.weight", vocab, hidden), w("lm_head.weight", hidden, vocab),
			genaiInt64s("q_shape", 0, 0, heads, head), genaiInt64s("kv_shape", 0, 0, kvHeads, head), genaiInt64s("back", 0, 0, hidden),
			genaiInt64s("axis2", 2)},
	}
	var layerOf []int
	add := func(layer int, n *onnxpb.NodeProto) {
		g.Node = append(g.Node, n)
		layerOf = append(layerOf, layer)
	}
	add(0, testmodel.Node("Gather", "embed", []string{"model.embed_tokens.weight", "input_ids"}, []string{"h0"}))
	h := "h0"
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("l%d_", l)
		g.Initializer = append(g.Initializer, w(p+"q", hidden, hidden), w(p+"k", hidden, kvHeads*head), w(p+"v", hidden, kvHeads*head))
		add(l, testmodel.Node("MatMul", p+"q", []string{h, p + "q"}, []string{p + "q_out"}))
		add(l, testmodel.Node("Reshape", p+"q_split", []string{p + "q_out", "q_shape"}, []string{p + "q_heads"}))
		add(l, testmodel.Node("Reshape", p+"q_merge", []string{p + "q_heads", "back"}, []string{p + "q_back"}))
		for _, kv := range []string{"key", "value"} {
			x := p + kv[:1]
			past := fmt.Sprintf("past_key_values.%d.%s", l, kv)
			g.Input = append(g.Input, testmodel.VInfo(past, graph.Float, "batch", kvHeads, "past", head))
			g.Output = append(g.Output, testmodel.VInfo(fmt.Sprintf("present.%d.%s", l, kv), graph.Float, "batch", kvHeads, "total", head))
			add(l, testmodel.Node("MatMul", x, []string{h, x}, []string{x + "_out"}))
			add(l, testmodel.Node("Reshape", x+"_split", []string{x + "_out", "kv_shape"}, []string{x + "_heads"}))
			add(l, testmodel.Node("Transpose", x+"_t", []string{x + "_heads"}, []string{x + "_bhsd"}, genaiIntsAttr("perm", 0, 2, 1, 3)))
			add(l, testmodel.Node("Concat", x+"_cat", []string{past, x + "_bhsd"}, []string{fmt.Sprintf("present.%d.%s", l, kv)}, genaiIntAttr("axis", 2)))
		}
		next := fmt.Sprintf("h%d", l+1)
		add(l, testmodel.Node("Add", p+"res", []string{h, p + "q_back"}, []string{next}))
		h = next
	}
	add(layers, testmodel.Node("MatMul", "lm_head", []string{h, "lm_head.weight"}, []string{"scores"}))
	add(layers, testmodel.Node("Cast", "mask_f", []string{"attention_mask"}, []string{"mask_f"}, genaiIntAttr("to", int64(graph.Float))))
	add(layers, testmodel.Node("ReduceMax", "mask_any", []string{"mask_f"}, []string{"mask_m"}, genaiIntsAttr("axes", 1), genaiIntAttr("keepdims", 1)))
	add(layers, testmodel.Node("Unsqueeze", "mask_b", []string{"mask_m", "axis2"}, []string{"mask_b"}))
	add(layers, testmodel.Node("Mul", "logits", []string{"scores", "mask_b"}, []string{"logits"}))
	g.Output = append([]*onnxpb.ValueInfoProto{testmodel.VInfo("logits", graph.Float, "batch", "seq", vocab)}, g.Output...)
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: testmodel.Opsets(), Graph: g}
	b, err := proto.Marshal(mp)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, layerOf
}

// writeGenAIDir splits the model at path by layer, stage i on devs[i] (the head with the
// last layer when devs are fewer), writes it with --emit genai and checks genai_config.json
// against genai's fields and the schema.
func writeGenAIDir(t *testing.T, path string, layerOf []int, devs []emit.Device, opt *Options) (*emit.Manifest, map[string]any, []byte) {
	t.Helper()
	m, err := ingest.Load(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stage := make([]int, len(layerOf))
	for i, l := range layerOf {
		stage[i] = min(l, len(devs)-1)
	}
	dir := filepath.Join(t.TempDir(), "out")
	man, err := emit.Write(m, &emit.Assignment{Stage: stage, Devices: devs}, dir, withGenAI(m, opt, emit.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	b := mustRead(t, filepath.Join(dir, File))
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	checkGenAIFields(t, doc)
	if err := schema.ValidateStrict("genai_config.v1", b); err != nil {
		t.Error(err)
	}
	// The manifest on disk carries the notes.
	disk, err := emit.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(diag.NoteStrings(disk.Notes), diag.NoteStrings(man.Notes)) {
		t.Errorf("manifest.json notes %q, want %q", disk.Notes, man.Notes)
	}
	return man, doc, b
}

func hasNote(man *emit.Manifest, sub string) bool {
	for _, n := range diag.NoteStrings(man.Notes) {
		if strings.HasPrefix(n, genaiNote) && strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// A decoder split by layers over three GPUs, with a Hugging Face config.json beside it:
// every field genai reads, the values the graph gives, the ones config.json gives, and the
// pipeline the manifest has.
func TestGenAIDecoder(t *testing.T) {
	path, layerOf := decoderLM(t, 2)
	hf := `{"model_type": "llama", "max_position_embeddings": 2048, "bos_token_id": 1, "eos_token_id": [2, 7],
		"pad_token_id": null, "num_attention_heads": 4, "hidden_size": 16, "vocab_size": 32}`
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "config.json"), []byte(hf), 0o644); err != nil {
		t.Fatal(err)
	}
	cuda := "CUDAExecutionProvider"
	devs := []emit.Device{{Name: "gpu0", Provider: cuda}, {Name: "gpu1", Provider: cuda}, {Name: "gpu2", Provider: cuda}}
	man, doc, raw := writeGenAIDir(t, path, layerOf, devs, &Options{})
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	mo, d := cfg.Model, cfg.Model.Decoder
	if mo.Type != "decoder-pipeline" || mo.ContextLength != 2048 || mo.VocabSize != 32 || mo.BOSTokenID != 1 ||
		!reflect.DeepEqual(mo.EOSTokenID, Tokens{2, 7}) || mo.PadTokenID != 2 {
		t.Errorf("model: %+v", mo)
	}
	if d.HeadSize != 4 || d.HiddenSize != 16 || d.NumAttentionHeads != 4 || d.NumHiddenLayers != 2 || d.NumKeyValueHeads != 2 {
		t.Errorf("decoder sizes: head %d hidden %d heads %d layers %d kv heads %d", d.HeadSize, d.HiddenSize, d.NumAttentionHeads, d.NumHiddenLayers, d.NumKeyValueHeads)
	}
	wantIn := DecoderInputs{InputIDs: "input_ids", AttentionMask: "attention_mask", PastKeyNames: "past_key_values.%d.key", PastValueNames: "past_key_values.%d.value"}
	wantOut := DecoderOutputs{Logits: "logits", PresentKeyNames: "present.%d.key", PresentValueNames: "present.%d.value"}
	if d.Inputs != wantIn || d.Outputs != wantOut {
		t.Errorf("names: %+v %+v", d.Inputs, d.Outputs)
	}
	if cfg.Search.MaxLength != 2048 || cfg.Search.NumBeams != 1 || cfg.Search.PastPresentShareBuffer {
		t.Errorf("search: %+v", cfg.Search)
	}
	// The pipeline is the manifest's, stage by stage, each on its GPU.
	if len(d.Pipeline) != 3 || len(man.Stages) != 3 {
		t.Fatalf("%d pipeline entries, %d stages", len(d.Pipeline), len(man.Stages))
	}
	for i, el := range d.Pipeline {
		st := man.Stages[i]
		if !reflect.DeepEqual(el, st.Pipeline) {
			t.Errorf("stage %d: genai_config.json %+v, manifest %+v", i, el, st.Pipeline)
		}
		gs := el[fmt.Sprintf("stage%d", i)]
		var ins, outs []string
		for _, r := range st.Inputs {
			ins = append(ins, r.Name)
		}
		for _, r := range st.Outputs {
			outs = append(outs, r.Name)
		}
		if gs.Filename != st.File || !reflect.DeepEqual(gs.Inputs, ins) || !reflect.DeepEqual(gs.Outputs, outs) || !gs.RunOnPrompt || !gs.RunOnTokenGen {
			t.Errorf("stage %d entry %+v", i, gs)
		}
		want := []map[string]map[string]string{{"cuda": {}}}
		if !reflect.DeepEqual(gs.SessionOptions.ProviderOptions, want) {
			t.Errorf("stage %d provider options %v, want %v", i, gs.SessionOptions.ProviderOptions, want)
		}
	}
	if !slices.Contains(man.Stages[0].Pipeline["stage0"].Inputs, "past_key_values.0.key") || !slices.Contains(man.Stages[2].Pipeline["stage2"].Outputs, "logits") {
		t.Errorf("the KV cache and logits are not where their layers are: %+v", d.Pipeline)
	}
	if got := d.SessionOptions.ProviderOptions; !reflect.DeepEqual(got, []map[string]map[string]string{{"cuda": {}}}) {
		t.Errorf("primary device %v, want cuda", got)
	}
	for _, n := range diag.NoteStrings(man.Notes) {
		if strings.HasPrefix(n, genaiNote) && !strings.Contains(n, "the stages run on 3 GPUs (gpu0, gpu1, gpu2)") {
			t.Errorf("unexpected note: %s", n)
		}
	}
	if !hasNote(man, "the stages run on 3 GPUs (gpu0, gpu1, gpu2)") {
		t.Errorf("no note of the GPUs: %q", man.Notes)
	}
	if dec := doc["model"].(map[string]any)["decoder"].(map[string]any); dec["pipeline"].([]any)[1].(map[string]any)["stage1"] == nil {
		t.Errorf("pipeline element 1 is not keyed stage1: %v", dec["pipeline"])
	}

	// CUDA ordinals reach every entry (the manifest's device_id) and the primary device,
	// and several GPUs are noted.
	m, err := ingest.Load(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := emit.NewLayout(m, &emit.Assignment{Stage: layerOf, Devices: devs}, withGenAI(m, &Options{}, emit.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range devs {
		l.Manifest.SetCUDADevice(d.Name, 3-i)
	}
	dir := filepath.Join(t.TempDir(), "ids")
	if err := l.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	cfg = Config{}
	if err := json.Unmarshal(mustRead(t, filepath.Join(dir, File)), &cfg); err != nil {
		t.Fatal(err)
	}
	for i, el := range cfg.Model.Decoder.Pipeline {
		if got := el[fmt.Sprintf("stage%d", i)].SessionOptions.ProviderOptions[0]["cuda"]["device_id"]; got != fmt.Sprint(3-i) {
			t.Errorf("stage %d device_id %q, want %d", i, got, 3-i)
		}
	}
	if got := cfg.Model.Decoder.SessionOptions.ProviderOptions[0]["cuda"]["device_id"]; got != "3" {
		t.Errorf("primary device_id %q, want the first stage's 3", got)
	}
	if !hasNote(l.Manifest, "the stages run on 3 GPUs") {
		t.Errorf("no note of the GPUs: %q", l.Manifest.Notes)
	}

	// All stages on one GPU whose ordinal is not 0: genai's buffers stay on device 0.
	one := []emit.Device{{Name: "gpu1", Provider: cuda}, {Name: "gpu1", Provider: cuda}, {Name: "gpu1", Provider: cuda}}
	l, err = emit.NewLayout(m, &emit.Assignment{Stage: layerOf, Devices: one}, withGenAI(m, &Options{}, emit.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	l.Manifest.SetCUDADevice("gpu1", 1)
	if err := l.WriteDir(filepath.Join(t.TempDir(), "one")); err != nil {
		t.Fatal(err)
	}
	if !hasNote(l.Manifest, "CUDA_VISIBLE_DEVICES=1") || hasNote(l.Manifest, "GPUs") {
		t.Errorf("notes %q", l.Manifest.Notes)
	}
}

// Without config.json the values the graph lacks are placeholders a note names; --genai
// and hf_config fill them; stages on the CPU and a GPU make the CPU genai's primary device.
func TestGenAIPlaceholdersAndSettings(t *testing.T) {
	path, layerOf := decoderLM(t, 1)
	devs := []emit.Device{{Name: "cpu", Provider: emit.DefaultProvider}, {Name: "gpu0", Provider: "CUDAExecutionProvider"}}
	man, _, raw := writeGenAIDir(t, path, layerOf, devs, &Options{})
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	mo := cfg.Model
	if mo.ContextLength != 0 || mo.BOSTokenID != -1 || !reflect.DeepEqual(mo.EOSTokenID, Tokens{-1}) || mo.PadTokenID != -1 {
		t.Errorf("placeholders: %+v", mo)
	}
	if mo.VocabSize != 32 || mo.Decoder.HiddenSize != 16 || mo.Decoder.NumAttentionHeads != 4 {
		t.Errorf("graph values: vocab %d hidden %d heads %d", mo.VocabSize, mo.Decoder.HiddenSize, mo.Decoder.NumAttentionHeads)
	}
	if !hasNote(man, "context_length, bos_token_id, eos_token_id, pad_token_id are placeholders") || !hasNote(man, "no genai_config.json or config.json beside the model") || !hasNote(man, `or give Options.Set["KEY"] = VALUE`) {
		t.Errorf("no placeholder note: %q", man.Notes)
	}
	if len(mo.Decoder.SessionOptions.ProviderOptions) != 0 || !hasNote(man, "primary device is the CPU") {
		t.Errorf("primary %v, notes %q", mo.Decoder.SessionOptions.ProviderOptions, man.Notes)
	}
	if got := mo.Decoder.Pipeline[0]["stage0"].SessionOptions.ProviderOptions; len(got) != 0 {
		t.Errorf("the CPU stage lists %v", got)
	}

	opt, err := Parse([]string{"context_length=4096", "bos_token_id=0", "eos_token_id=5,6", "hidden_size=64"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	man, _, raw = writeGenAIDir(t, path, layerOf, devs, opt)
	cfg = Config{}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	mo = cfg.Model
	if mo.ContextLength != 4096 || cfg.Search.MaxLength != 4096 || mo.BOSTokenID != 0 || !reflect.DeepEqual(mo.EOSTokenID, Tokens{5, 6}) ||
		mo.PadTokenID != 5 || mo.Decoder.HiddenSize != 64 {
		t.Errorf("settings: %+v", mo)
	}
	if hasNote(man, "placeholders") {
		t.Errorf("placeholders noted: %q", man.Notes)
	}
	if !strings.Contains(string(raw), `"eos_token_id": [`) {
		t.Errorf("eos_token_id is not a list:\n%s", raw)
	}

	// hf_config names the file; values the graph gives win over it, with a note.
	hf := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(hf, []byte(`{"n_positions": 512, "eos_token_id": 9, "n_head": 8}`), 0o644); err != nil {
		t.Fatal(err)
	}
	man, _, raw = writeGenAIDir(t, path, layerOf, devs, &Options{HFConfig: hf})
	cfg = Config{}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Model.ContextLength != 512 || cfg.Model.PadTokenID != 9 || cfg.Model.Decoder.NumAttentionHeads != 4 {
		t.Errorf("from %s: %+v", hf, cfg.Model)
	}
	if !hasNote(man, "num_attention_heads 4 (config.json 8)") || !hasNote(man, "bos_token_id are placeholders") || !hasNote(man, "config.json does not say") {
		t.Errorf("notes %q", man.Notes)
	}
	// One that cannot be read is an error, and nothing is written.
	m, err := ingest.Load(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	_, err = emit.Write(m, &emit.Assignment{Stage: make([]int, len(m.Graph.Nodes))}, dir, withGenAI(m, &Options{HFConfig: hf + ".missing"}, emit.Options{}))
	if err == nil || !strings.Contains(err.Error(), "Options.HFConfig: ") {
		t.Errorf("a missing hf_config: %v", err)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("the failed write left %s: %v", dir, serr)
	}
}

func TestParseGenAI(t *testing.T) {
	for _, bad := range []string{"context_length=0", "context_length", "eos=2", "bos_token_id=-1", "pad_token_id=1,2", "vocab_size=x", "=3"} {
		if _, err := Parse([]string{bad}, nil); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	opt, err := Parse([]string{"hf_config=a/config.json", "pad_token_id=0", "eos_token_id=1, 2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opt.HFConfig != "a/config.json" || !reflect.DeepEqual(opt.Set, map[string][]int64{"pad_token_id": {0}, "eos_token_id": {1, 2}}) {
		t.Errorf("%+v", opt)
	}
	// A Go caller reads the option as Go names it; the command passes its flag's name.
	for _, c := range []struct {
		names   diag.Names
		msg, on string
	}{
		{nil, `genai setting "eos=2": unknown key "eos"`, "Options.Set"},
		{diag.Names{"Set": "--genai"}, `--genai "eos=2": unknown key "eos"`, "--genai"},
	} {
		_, err := Parse([]string{"eos=2"}, c.names)
		var de *diag.Error
		if !errors.As(err, &de) || de.Kind != diag.KindUsage || !strings.HasPrefix(de.Msg, c.msg) || de.Subject != (diag.Subject{Kind: diag.Option, Name: c.on}) {
			t.Errorf("names %v: %#v", c.names, err)
		}
	}
	keys := Keys()
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"bos_token_id", "context_length", "eos_token_id", "hf_config", "hidden_size", "num_attention_heads", "pad_token_id", "vocab_size"}) {
		t.Errorf("keys %v", keys)
	}
}

// A model that is no decoder still gets a file, with every gap noted; Force replaces a
// directory holding genai_config.json, and a failed write leaves nothing.
func TestGenAINotADecoderAndForce(t *testing.T) {
	p := testmodel.DecoderModel(t) // a past input and a Concat, but no token ids, logits or layers
	m, err := ingest.Load(p, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	a := &emit.Assignment{Stage: []int{0, 0, 1, 1}}
	man, err := emit.Write(m, a, dir, withGenAI(m, &Options{}, emit.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	// Its one state pair (past_key → present) is not named as a KV cache: one note says so,
	// and the one output besides it is taken for the logits.
	for _, want := range []string{"no input_ids input", "keeps 1 state pairs (past_key → present) but no past key/value inputs", `model input "x" is not one genai feeds`} {
		if !hasNote(man, want) {
			t.Errorf("no note %q: %q", want, man.Notes)
		}
	}
	if hasNote(man, "no logits output") || hasNote(man, `model input "past_key"`) {
		t.Errorf("notes contradict the state note: %q", man.Notes)
	}
	if err := schema.ValidateStrict("genai_config.v1", mustRead(t, filepath.Join(dir, File))); err != nil {
		t.Error(err)
	}
	if _, err := emit.Write(m, a, dir, withGenAI(m, &Options{}, emit.Options{})); err == nil {
		t.Error("an existing directory was replaced without Force")
	}
	if _, err := emit.Write(m, a, dir, emit.Options{Force: true}); err != nil {
		t.Fatalf("Force over genai_config.json: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, File)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Force kept the old genai_config.json: %v", err)
	}
	// A failure after genai_config.json is written leaves the directory as it was.
	o := withGenAI(m, &Options{}, emit.Options{Force: true})
	write := o.BeforeManifest
	o.BeforeManifest = func(tmp string, man *emit.Manifest) error {
		if err := write(tmp, man); err != nil {
			return err
		}
		return errors.New("injected failure")
	}
	if _, err := emit.Write(m, a, dir, o); err == nil {
		t.Fatal("the injected failure did not fail")
	}
	if _, err := os.Stat(filepath.Join(dir, File)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed write left genai_config.json: %v", err)
	}
}

// withGenAI returns o writing genai_config.json for m (as --emit genai does).
func withGenAI(m *ingest.Model, opt *Options, o emit.Options) emit.Options {
	o.BeforeManifest = func(dir string, man *emit.Manifest) error { return Write(dir, m, man, opt) }
	return o
}
