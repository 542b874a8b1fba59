package genai

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/internal/outdir"
)

// onnxruntime-genai's pipeline decoder (--emit genai): genai_config.json in the output
// directory makes the stage files one model for onnxruntime-genai (og.Model(dir)), whose
// model type "decoder-pipeline" runs them in order as one decoder, step after step, keeping
// the KV cache between steps. The file follows genai's src/config.cpp (the JSON parser,
// which refuses any field it does not know), src/config.h (defaults) and
// src/models/decoder_only_pipeline.cpp (how the stages run); see genai_test.go for the
// fields read there.
//
// What the ONNX model gives: the layer count, KV heads and head size from the past key
// inputs ([batch, kv_heads, past, head_size]); the attention heads from an attention
// operator's num_heads or a Reshape of the queries to [batch, seq, heads, head_size]; the
// hidden and vocabulary sizes from the token embedding (the Gather of input_ids from a
// [vocab, hidden] weight), else the vocabulary from the logits. What it does not give (the
// context length, the token ids) comes from --genai KEY=VALUE, else from the Hugging Face
// config.json beside the model (or named by --genai hf_config=FILE); what neither says
// stays a placeholder, and a manifest note names the fields to fill: 0 for a size (genai
// refuses context_length 0 at load) and -1 for a token id.
//
// Hybrid stacks (linear-attention or conv layers between attention layers) have a KV cache
// on some layers only; genai finds those layers by the names of the model's inputs
// (src/models/kv_cache.cpp), so the KV templates are written as for any decoder, with
// num_hidden_layers the whole stack. The other state pairs (graph.StatePairs) give
// decoder.layer_types and, for a conv cache, past_conv_names / present_conv_names (fields
// genai's parser reads; its lfm2 model uses them). genai's decoder-pipeline binds such state
// only under names it derives from past_key_names (KV template up to its last '.', then
// conv_state or recurrent_state; src/models/recurrent_state.cpp): state so named is
// genai's, other state gets one note.

// File is onnxruntime-genai's configuration file name inside an output directory.
const File = outdir.GenAIFile

// ModelType is the model type of genai's pipeline decoder (src/models/model_type.h).
const ModelType = "decoder-pipeline"

// Options say where the values the ONNX model does not hold come from. Write takes a nil
// *Options as the zero Options.
type Options struct {
	// HFConfig is a Hugging Face config.json to read; empty: config.json beside the model,
	// when there is one.
	HFConfig string
	// Set are values given by hand (--genai KEY=VALUE), which win over the model and
	// config.json: context_length, bos_token_id, eos_token_id (one or more), pad_token_id,
	// vocab_size, hidden_size, num_attention_heads.
	Set map[string][]int64
	// Names are the caller's names of these options, by field ("Set": "--genai",
	// "HFConfig": "--genai hf_config"), for errors and notes to name; without a name they
	// say "Options.Set". The command passes its flags.
	Names diag.Names
}

// genaiSettable are the keys of Options.Set, in help order; hf_config names a file.
var genaiSettable = []string{"context_length", "bos_token_id", "eos_token_id", "pad_token_id", "vocab_size", "hidden_size", "num_attention_heads"}

// Keys lists what --genai accepts, in help order.
func Keys() []string { return append([]string{"hf_config"}, genaiSettable...) }

// Parse reads KEY=VALUE settings (the command's --genai): hf_config=FILE, or one of Keys
// with an integer (eos_token_id takes a comma-separated list). A bad setting is a
// *diag.Error of kind usage about the option names calls "Set" (names, the caller's names of
// the options, are kept in the Options returned).
func Parse(list []string, names diag.Names) (*Options, error) {
	opt := &Options{Set: map[string][]int64{}, Names: names}
	set := names.Or("Set", "genai setting")
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, diag.Usage("%s %q: want KEY=VALUE with KEY one of %s", set, kv, strings.Join(Keys(), ", ")).About(diag.Option, names.Name("Set"))
		}
		if k == "hf_config" {
			opt.HFConfig = v
			continue
		}
		if !slices.Contains(genaiSettable, k) {
			return nil, diag.Usage("%s %q: unknown key %q (want one of %s)", set, kv, k, strings.Join(Keys(), ", ")).About(diag.Option, names.Name("Set"))
		}
		// Token ids are at least 0, sizes at least 1.
		least := int64(1)
		if strings.HasSuffix(k, "_id") {
			least = 0
		}
		var vals []int64
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
			if err != nil || n < least {
				return nil, diag.Usage("%s %q: %q is not a valid %s (an integer of at least %d)", set, kv, s, k, least).About(diag.Option, names.Name("Set"))
			}
			vals = append(vals, n)
		}
		if len(vals) > 1 && k != "eos_token_id" {
			return nil, diag.Usage("%s %q: %s takes one value", set, kv, k).About(diag.Option, names.Name("Set"))
		}
		opt.Set[k] = vals
	}
	return opt, nil
}

// Config is genai_config.json: the model and the search options.
type Config struct {
	Model  Model  `json:"model"`
	Search Search `json:"search"`
}

// Model is genai's "model" object for the pipeline decoder.
type Model struct {
	// Type is ModelType.
	Type string `json:"type"`
	// ContextLength is the longest sequence, prompt and generated tokens together (0: not
	// known, a placeholder genai refuses).
	ContextLength int64 `json:"context_length"`
	// VocabSize is the number of tokens (0: not known).
	VocabSize int64 `json:"vocab_size"`
	// Token ids; -1 when not known.
	BOSTokenID int64   `json:"bos_token_id"`
	EOSTokenID Tokens  `json:"eos_token_id"`
	PadTokenID int64   `json:"pad_token_id"`
	Decoder    Decoder `json:"decoder"`
}

// Tokens is a list of token ids, written as one number when it has one (as genai and
// Hugging Face write eos_token_id).
type Tokens []int64

// MarshalJSON implements json.Marshaler.
func (t Tokens) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]int64(t))
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Tokens) UnmarshalJSON(b []byte) error {
	var one int64
	if err := json.Unmarshal(b, &one); err == nil {
		*t = Tokens{one}
		return nil
	}
	return json.Unmarshal(b, (*[]int64)(t))
}

// Decoder is genai's "decoder" object: the primary session options, the sizes of the
// KV cache, the names genai feeds and reads, and the stages.
type Decoder struct {
	// SessionOptions choose genai's primary device: where it keeps input_ids, the
	// attention mask, the KV cache and the logits (see genaiPrimary).
	SessionOptions emit.GenAISessionOpts `json:"session_options"`
	// Sizes; 0 when not known.
	HeadSize          int64 `json:"head_size"`
	HiddenSize        int64 `json:"hidden_size"`
	NumAttentionHeads int64 `json:"num_attention_heads"`
	NumHiddenLayers   int64 `json:"num_hidden_layers"`
	NumKeyValueHeads  int64 `json:"num_key_value_heads"`
	// LayerTypes name each layer's kind ("full_attention" for a layer with a KV cache,
	// "conv" or "linear_attention" for a layer that keeps other state), written for hybrid
	// stacks only: genai's parser reads it (Decoder.layer_types, the LFM2 fields).
	LayerTypes []string       `json:"layer_types,omitempty"`
	Inputs     DecoderInputs  `json:"inputs"`
	Outputs    DecoderOutputs `json:"outputs"`
	// Pipeline has one element per stage, {"stage<i>": entry}, in stage order: the
	// manifest's stages[i].pipeline.
	Pipeline []map[string]emit.GenAIStage `json:"pipeline"`
}

// DecoderInputs are the model inputs genai feeds, by name; the KV cache's are
// templates with %d for the layer. Empty names are left out (genai then looks for its
// default name, which the model does not have).
type DecoderInputs struct {
	InputIDs       string `json:"input_ids,omitempty"`
	AttentionMask  string `json:"attention_mask,omitempty"`
	PositionIDs    string `json:"position_ids,omitempty"`
	PastKeyNames   string `json:"past_key_names,omitempty"`
	PastValueNames string `json:"past_value_names,omitempty"`
	// PastConvNames is the conv state's input template (genai's past_conv_names, read by
	// its lfm2 model), for hybrid stacks with a conv cache.
	PastConvNames string `json:"past_conv_names,omitempty"`
}

// DecoderOutputs are the model outputs genai reads: the logits and the KV cache's
// next values (templates with %d).
type DecoderOutputs struct {
	Logits            string `json:"logits,omitempty"`
	PresentKeyNames   string `json:"present_key_names,omitempty"`
	PresentValueNames string `json:"present_value_names,omitempty"`
	// PresentConvNames is the conv state's output template (present_conv_names).
	PresentConvNames string `json:"present_conv_names,omitempty"`
}

// Search is genai's "search" object: greedy decoding up to the context length.
type Search struct {
	DiversityPenalty  float64 `json:"diversity_penalty"`
	DoSample          bool    `json:"do_sample"`
	EarlyStopping     bool    `json:"early_stopping"`
	LengthPenalty     float64 `json:"length_penalty"`
	MaxLength         int64   `json:"max_length"`
	MinLength         int64   `json:"min_length"`
	NoRepeatNgramSize int64   `json:"no_repeat_ngram_size"`
	NumBeams          int64   `json:"num_beams"`
	NumReturnSeqs     int64   `json:"num_return_sequences"`
	// PastPresentShareBuffer is the model builder's choice where its genai_config.json is
	// beside the model; false otherwise: sharing needs a model exported for it
	// (GroupQueryAttention on a max_length buffer); the Concat KV caches of transformers
	// and optimum exports grow each step.
	PastPresentShareBuffer bool    `json:"past_present_share_buffer"`
	RepetitionPenalty      float64 `json:"repetition_penalty"`
	Temperature            float64 `json:"temperature"`
	TopK                   int64   `json:"top_k"`
	TopP                   float64 `json:"top_p"`
}

// Write writes genai_config.json for the manifest's stages of m into dir and adds the
// manifest notes it calls for; set it as emit.Options.BeforeManifest (a closure over m and
// opt) so that the manifest written after it carries the notes.
func Write(dir string, m *ingest.Model, man *emit.Manifest, opt *Options) error {
	cfg, notes, err := genaiConfig(m, man, opt)
	if err != nil {
		return err
	}
	for _, n := range notes {
		if !slices.ContainsFunc(man.Notes, func(o diag.Note) bool { return o.Msg == n.Msg }) {
			man.Notes = append(man.Notes, n)
		}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return outdir.WriteFileSync(filepath.Join(dir, File), append(b, '\n'))
}

// genaiNote prefixes the notes about genai_config.json.
const genaiNote = File + ": "

// genaiConfig builds genai_config.json for the manifest's stages of m, with the notes the
// manifest should carry.
func genaiConfig(m *ingest.Model, man *emit.Manifest, opt *Options) (*Config, []diag.Note, error) {
	if opt == nil {
		opt = &Options{}
	}
	var notes []diag.Note
	note := func(k diag.NoteKind, format string, args ...any) {
		notes = append(notes, diag.Notef(k, genaiNote+format, args...))
	}
	hf, hfPath, err := readHFConfig(m.Path, opt.HFConfig, opt.Names)
	if err != nil {
		return nil, nil, err
	}
	g := m.Graph
	gio := genaiNames(g)
	cfg := &Config{
		Model: Model{Type: ModelType, BOSTokenID: -1, EOSTokenID: Tokens{-1}, PadTokenID: -1},
		Search: Search{DoSample: false, EarlyStopping: true, LengthPenalty: 1, NumBeams: 1, NumReturnSeqs: 1,
			RepetitionPenalty: 1, Temperature: 1, TopK: 1, TopP: 1},
	}
	d := &cfg.Model.Decoder
	d.Inputs, d.Outputs = gio.in, gio.out
	d.NumHiddenLayers, d.NumKeyValueHeads, d.HeadSize = gio.layers, gio.kvHeads, gio.headSize
	d.LayerTypes = gio.layerTypes
	vocab, hidden := embedding(g, gio.idsTensor)
	d.NumAttentionHeads = attentionHeads(g, gio.headSize, gio.kvHeads, hidden)
	if vocab == 0 && gio.logitsTensor >= 0 {
		if s := g.Tensors[gio.logitsTensor].Shape; len(s) > 0 && s[len(s)-1].Known() {
			vocab = s[len(s)-1].Value
		}
	}
	d.HiddenSize, cfg.Model.VocabSize = hidden, vocab

	// Values the graph gave are checked against config.json, which fills the others;
	// --genai wins over both.
	var disagree []string
	fill := func(key string, v *int64) {
		c, ok := hf.get(key)
		switch {
		case ok && *v == 0:
			*v = c
		case ok && *v != c:
			disagree = append(disagree, fmt.Sprintf("%s %d (config.json %d)", key, *v, c))
		}
	}
	fill("vocab_size", &cfg.Model.VocabSize)
	fill("hidden_size", &d.HiddenSize)
	fill("num_attention_heads", &d.NumAttentionHeads)
	fill("num_hidden_layers", &d.NumHiddenLayers)
	fill("num_key_value_heads", &d.NumKeyValueHeads)
	fill("head_size", &d.HeadSize)
	if len(disagree) > 0 {
		note(diag.NoteMismatch, "the model's %s: the file keeps the model's", strings.Join(disagree, ", "))
	}
	if c, ok := hf.get("context_length"); ok {
		cfg.Model.ContextLength = c
	}
	if c, ok := hf.get("bos_token_id"); ok {
		cfg.Model.BOSTokenID = c
	}
	if len(hf.eos) > 0 {
		cfg.Model.EOSTokenID = hf.eos
	}
	if c, ok := hf.get("pad_token_id"); ok {
		cfg.Model.PadTokenID = c
	} else if len(hf.eos) > 0 {
		cfg.Model.PadTokenID = hf.eos[0] // as genai's model builder does
	}
	set := func(key string, v *int64) {
		if x, ok := opt.Set[key]; ok {
			*v = x[0]
		}
	}
	set("context_length", &cfg.Model.ContextLength)
	set("vocab_size", &cfg.Model.VocabSize)
	set("bos_token_id", &cfg.Model.BOSTokenID)
	set("pad_token_id", &cfg.Model.PadTokenID)
	set("hidden_size", &d.HiddenSize)
	set("num_attention_heads", &d.NumAttentionHeads)
	if x, ok := opt.Set["eos_token_id"]; ok {
		cfg.Model.EOSTokenID = append(Tokens{}, x...)
		if _, pad := opt.Set["pad_token_id"]; !pad && cfg.Model.PadTokenID == -1 {
			cfg.Model.PadTokenID = x[0]
		}
	}
	cfg.Search.MaxLength = cfg.Model.ContextLength
	if hf.share != nil {
		// the model builder's choice: GroupQueryAttention on a max_length buffer
		cfg.Search.PastPresentShareBuffer = *hf.share
	}

	// The placeholders left.
	var missing []string
	for _, f := range []struct {
		name string
		v    int64
		none int64
	}{{"context_length", cfg.Model.ContextLength, 0}, {"bos_token_id", cfg.Model.BOSTokenID, -1},
		{"eos_token_id", cfg.Model.EOSTokenID[0], -1}, {"pad_token_id", cfg.Model.PadTokenID, -1},
		{"vocab_size", cfg.Model.VocabSize, 0}, {"decoder.hidden_size", d.HiddenSize, 0},
		{"decoder.num_attention_heads", d.NumAttentionHeads, 0}} {
		if f.v == f.none {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		from := "no genai_config.json or config.json beside the model"
		if hfPath != "" {
			var bases []string
			for _, p := range strings.Split(hfPath, ", ") {
				bases = append(bases, filepath.Base(p))
			}
			from = strings.Join(bases, " and ") + " do not say"
			if len(bases) == 1 {
				from = bases[0] + " does not say"
			}
		}
		note(diag.NoteApprox, "%s are placeholders (0 for a size, -1 for a token id; %s): fill them in from the model's config.json and tokenizer, or give %s (onnxruntime-genai refuses context_length 0)", strings.Join(missing, ", "), from, opt.Names.SayKey("Set", "KEY", "VALUE"))
	}
	for _, s := range gio.notes {
		note(diag.NoteMismatch, "%s", s)
	}

	// The stages: the manifest's pipeline entries, in stage order.
	managed := gio.managed()
	var provs []string
	for i, st := range man.Stages {
		id := fmt.Sprintf("stage%d", i)
		gs, ok := st.Pipeline[id]
		if !ok {
			gs = emit.GenAIPipelineEntry(st)
		}
		d.Pipeline = append(d.Pipeline, map[string]emit.GenAIStage{id: gs})
		provs = append(provs, genaiProviderOf(gs))
	}
	for _, tr := range man.Transfers {
		if managed[tr.Tensor] {
			note(diag.NoteMismatch, "stage %d passes %q to stage %d, but genai binds %q to its own buffers and passes it to no stage: cut elsewhere so that the stage reading it computes it", tr.From, tr.Tensor, tr.To, tr.Tensor)
		}
	}
	d.SessionOptions, notes = genaiPrimary(man, provs, notes)
	return cfg, notes, nil
}

// genaiProviderOf is the genai provider name of a pipeline entry ("" for the CPU).
func genaiProviderOf(gs emit.GenAIStage) string {
	for _, po := range gs.SessionOptions.ProviderOptions {
		for name := range po {
			return name
		}
	}
	return ""
}

// genaiRuns are the genai provider names of a stage that genai's dispatch table knows
// (src/models/session_options.cpp, compared after src/config.cpp's NormalizeProviderName,
// which also accepts the lower-case names genaiProviders writes), besides the CPU.
var genaiRuns = map[string]bool{"cuda": true, "dml": true, "qnn": true, "webgpu": true, "OpenVINO": true,
	"NvTensorRtRtx": true, "VitisAI": true, "AMDGPU": true, "RyzenAI": true}

// genaiPrimary chooses the decoder's session options, genai's primary device: CUDA or QNN
// when every stage runs there, else the CPU. genai feeds the managed tensors (input_ids,
// attention mask, KV cache, logits) from the primary device and refuses a stage holding one
// unless the primary device is the CPU, QNN, or CUDA with the stage listing cuda
// (IntermediatePipelineState::SupportsPrimaryDevice in decoder_only_pipeline.cpp); with the
// CPU primary, ONNX Runtime copies them to and from the stages' devices each step.
func genaiPrimary(man *emit.Manifest, provs []string, notes []diag.Note) (emit.GenAISessionOpts, []diag.Note) {
	so := emit.GenAISessionOpts{ProviderOptions: []map[string]map[string]string{}}
	note := func(k diag.NoteKind, format string, args ...any) {
		notes = append(notes, diag.Notef(k, genaiNote+format, args...))
	}
	same := len(provs) > 0
	for _, p := range provs {
		same = same && p == provs[0]
	}
	var odd []string
	for i, p := range provs {
		if p != "" && !genaiRuns[p] {
			odd = append(odd, fmt.Sprintf("stage %d (%s)", i, man.Stages[i].Provider))
		}
	}
	if len(odd) > 0 {
		note(diag.NoteMismatch, "onnxruntime-genai has no execution provider for %s: run those stages on another provider", strings.Join(odd, ", "))
	}
	// genai keeps its CUDA buffers on device 0 (DeviceInterface::GetDeviceId, src/smartptrs.h)
	// and runs every CUDA session on its one stream (src/cuda/session_options.cpp).
	gpus, ids := map[string]bool{}, map[string]bool{}
	var names []string
	for i, p := range provs {
		if p != "cuda" {
			continue
		}
		st := man.Stages[i]
		if !gpus[st.Device] {
			gpus[st.Device] = true
			names = append(names, st.Device)
		}
		for _, po := range st.Pipeline[fmt.Sprintf("stage%d", i)].SessionOptions.ProviderOptions {
			ids[po["cuda"]["device_id"]] = true
		}
	}
	switch {
	case len(gpus) > 1:
		note(diag.NoteMismatch, "the stages run on %d GPUs (%s): genai keeps its buffers on CUDA device 0 and runs every CUDA session on one CUDA stream, so a pipeline over several GPUs is not known to run under genai", len(gpus), strings.Join(names, ", "))
	case len(ids) == 1 && !ids[""] && !ids["0"]:
		for id := range ids {
			note(diag.NoteMismatch, "the CUDA stages have device_id %s, but genai keeps its buffers and stream on CUDA device 0: run with CUDA_VISIBLE_DEVICES=%s and device_id 0", id, id)
		}
	}
	if same && (provs[0] == "cuda" || provs[0] == "qnn") {
		// The first stage's provider and options, as every stage has them.
		so.ProviderOptions = append(so.ProviderOptions, man.Stages[0].Pipeline["stage0"].SessionOptions.ProviderOptions...)
		return so, notes
	}
	if !same || provs[0] != "" {
		note(diag.NoteInfo, "genai's primary device is the CPU (decoder.session_options): it keeps input_ids, the KV cache and the logits there, and ONNX Runtime copies them to and from the stages on other devices each step")
	}
	return so, notes
}

// genaiIO is what genai feeds and reads, found in the graph.
type genaiIO struct {
	in  DecoderInputs
	out DecoderOutputs
	// layers, kvHeads and headSize come from the past key inputs; 0 when not known.
	layers, kvHeads, headSize int64
	// idsTensor and logitsTensor are the tensor ids of input_ids and the logits (-1: none).
	idsTensor, logitsTensor int
	// kv are the names of the past and present tensors genai binds (the KV cache, and
	// hybrid state under the names genai derives).
	kv []string
	// layerTypes is decoder.layer_types (nil: not a hybrid stack, or not every layer known).
	layerTypes []string
	// stateInputs are the names of other state, which genai does not bind (one note says so).
	stateInputs []string
	notes       []string
}

// managed are the tensor names genai binds itself.
func (gio genaiIO) managed() map[string]bool {
	out := map[string]bool{}
	for _, n := range []string{gio.in.InputIDs, gio.in.AttentionMask, gio.in.PositionIDs, gio.out.Logits} {
		if n != "" {
			out[n] = true
		}
	}
	for _, n := range gio.kv {
		out[n] = true
	}
	return out
}

// digits matches the first number of a name: the layer of a KV cache tensor.
var digits = regexp.MustCompile(`[0-9]+`)

// kvTemplates groups names of rank-4 tensors by their template (the first number replaced
// by %d) and returns the key and value templates, with the layers they cover (ascending)
// and the names of their tensors. The key and value templates cover the same layers: all
// of 0..n-1, or a subset in a hybrid stack whose other layers keep other state (genai
// finds the layers of a KV cache by the names of the model's inputs, kv_cache.cpp).
func kvTemplates(g *graph.Graph, ids []int) (key, value string, layers []int64, names []string) {
	type group struct {
		layers map[int64]int // layer → tensor id
	}
	groups := map[string]*group{}
	var order []string
	for _, t := range ids {
		name := g.Tensors[t].Name
		if s := g.Tensors[t].Shape; s != nil && len(s) != 4 {
			continue
		}
		loc := digits.FindStringIndex(name)
		if loc == nil {
			continue
		}
		n, err := strconv.ParseInt(name[loc[0]:loc[1]], 10, 32)
		if err != nil {
			continue
		}
		tmpl := name[:loc[0]] + "%d" + name[loc[1]:]
		gr := groups[tmpl]
		if gr == nil {
			gr = &group{layers: map[int64]int{}}
			groups[tmpl] = gr
			order = append(order, tmpl)
		}
		gr.layers[n] = t
	}
	role := func(tmpl string) string {
		pre, suf, _ := strings.Cut(strings.ToLower(tmpl), "%d")
		for _, s := range []string{suf, pre} {
			k, v := strings.LastIndex(s, "key"), strings.LastIndex(s, "value")
			switch {
			case k > v:
				return "key"
			case v > k:
				return "value"
			}
		}
		return ""
	}
	sorted := func(gr *group) []int64 {
		var ls []int64
		for l := range gr.layers {
			ls = append(ls, l)
		}
		slices.Sort(ls)
		return ls
	}
	for _, kt := range order {
		if role(kt) != "key" {
			continue
		}
		kl := sorted(groups[kt])
		for _, vt := range order {
			if role(vt) != "value" || !slices.Equal(sorted(groups[vt]), kl) {
				continue
			}
			for _, tm := range []string{kt, vt} {
				for _, l := range kl {
					names = append(names, g.Tensors[groups[tm].layers[l]].Name)
				}
			}
			return kt, vt, kl, names
		}
	}
	return "", "", nil, nil
}

// template is name with its first number replaced by %d, and that number (-1: none).
func template(name string) (string, int64) {
	loc := digits.FindStringIndex(name)
	if loc == nil {
		return name, -1
	}
	n, err := strconv.ParseInt(name[loc[0]:loc[1]], 10, 32)
	if err != nil {
		return name, -1
	}
	return name[:loc[0]] + "%d" + name[loc[1]:], n
}

// derivedState are the names genai's decoder-pipeline gives a hybrid layer's conv and
// recurrent state (recurrent_state.cpp): the KV template up to its last '.', then
// conv_state or recurrent_state; "" when the template has no '.'.
func derivedState(kvTemplate string) (conv, recurrent string) {
	i := strings.LastIndex(kvTemplate, ".")
	if i < 0 {
		return "", ""
	}
	return kvTemplate[:i+1] + "conv_state", kvTemplate[:i+1] + "recurrent_state"
}

// otherState is the model's state besides the KV cache: its pairs grouped by the input's
// template, in the order found.
type otherState struct {
	past, present []string         // templates, one per group
	layers        []map[int64]bool // per group, the layers it covers
	inputs        []string         // the names of all its inputs and outputs
	pairs         int
}

// findOtherState groups the graph's state pairs that are not the KV cache (kv: its tensor
// names) by template.
func findOtherState(g *graph.Graph, kv map[string]bool) otherState {
	var st otherState
	pairs, err := g.StatePairs(nil)
	if err != nil {
		return st
	}
	at := map[string]int{}
	for _, p := range pairs {
		in, out := g.Tensors[p.In].Name, g.Tensors[p.Out].Name
		if kv[in] || kv[out] {
			continue
		}
		pt, l := template(in)
		ct, _ := template(out)
		i, ok := at[pt]
		if !ok {
			i = len(st.past)
			at[pt] = i
			st.past = append(st.past, pt)
			st.present = append(st.present, ct)
			st.layers = append(st.layers, map[int64]bool{})
		}
		if l >= 0 {
			st.layers[i][l] = true
		}
		st.inputs = append(st.inputs, in, out)
		st.pairs++
	}
	return st
}

// genaiNames finds the inputs and outputs genai binds: input_ids, attention_mask,
// position_ids, the past and present key/value templates and the logits.
func genaiNames(g *graph.Graph) genaiIO {
	gio := genaiIO{idsTensor: -1, logitsTensor: -1}
	byName := func(ids []int, name string) int {
		for _, t := range ids {
			if g.Tensors[t].Name == name {
				return t
			}
		}
		return -1
	}
	if t := byName(g.Inputs, "input_ids"); t >= 0 {
		gio.idsTensor = t
	} else if t := embeddingIDs(g); t >= 0 {
		gio.idsTensor = t
	}
	if gio.idsTensor >= 0 {
		gio.in.InputIDs = g.Tensors[gio.idsTensor].Name
	} else {
		gio.notes = append(gio.notes, "the model has no input_ids input (a token-id input read by the token embedding): genai feeds token ids")
	}
	if t := byName(g.Inputs, "attention_mask"); t >= 0 {
		gio.in.AttentionMask = "attention_mask"
	}
	if t := byName(g.Inputs, "position_ids"); t >= 0 {
		gio.in.PositionIDs = "position_ids"
	}
	pk, pv, layers, pastNames := kvTemplates(g, g.Inputs)
	ck, cv, outLayers, presentNames := kvTemplates(g, g.Outputs)
	kvNames := map[string]bool{}
	for _, n := range append(slices.Clone(pastNames), presentNames...) {
		kvNames[n] = true
	}
	other := findOtherState(g, kvNames)
	haveKV := len(layers) > 0 && slices.Equal(outLayers, layers)
	switch {
	case len(layers) == 0 && other.pairs > 0:
		gio.notes = append(gio.notes, fmt.Sprintf("the model keeps %d state pairs (%s) but no past key/value inputs: genai's decoder-pipeline carries state only beside a KV cache (past_key_names), so it would not feed them", other.pairs, stateList(other)))
		gio.stateInputs = other.inputs
	case len(layers) == 0:
		gio.notes = append(gio.notes, "the model has no past key/value inputs (past_key_values.%d.key, .value): genai's decoder feeds only the new token each step and expects a KV cache")
	case !haveKV:
		gio.notes = append(gio.notes, fmt.Sprintf("the model has %d layers of past key/value inputs but no matching present outputs: genai cannot carry its KV cache", len(layers)))
	default:
		gio.in.PastKeyNames, gio.in.PastValueNames = pk, pv
		gio.out.PresentKeyNames, gio.out.PresentValueNames = ck, cv
		gio.layers = layers[len(layers)-1] + 1
		gio.kv = append(pastNames, presentNames...)
		gio.hybrid(other, layers)
		t, _ := g.TensorByName(fmt.Sprintf(pk, layers[0]))
		if s := g.Tensors[t].Shape; len(s) == 4 {
			if s[1].Known() {
				gio.kvHeads = s[1].Value
			}
			if s[3].Known() {
				gio.headSize = s[3].Value
			}
		}
	}
	if t := byName(g.Outputs, "logits"); t >= 0 {
		gio.logitsTensor = t
	} else {
		kv := map[string]bool{}
		for _, n := range append(append(slices.Clone(presentNames), gio.kv...), gio.stateInputs...) {
			kv[n] = true
		}
		var rest []int
		for _, t := range g.Outputs {
			if !kv[g.Tensors[t].Name] {
				rest = append(rest, t)
			}
		}
		if len(rest) == 1 {
			gio.logitsTensor = rest[0]
		} else {
			gio.notes = append(gio.notes, "the model has no logits output: genai reads the next token's scores from outputs.logits; name it there")
		}
	}
	if gio.logitsTensor >= 0 {
		gio.out.Logits = g.Tensors[gio.logitsTensor].Name
	}
	managed := gio.managed()
	for _, n := range gio.stateInputs {
		managed[n] = true // their note is the state's
	}
	for _, t := range g.Inputs {
		if n := g.Tensors[t].Name; !managed[n] {
			gio.notes = append(gio.notes, fmt.Sprintf("model input %q is not one genai feeds (input_ids, attention_mask, position_ids, the KV cache): pass it with the generator's extra inputs", n))
		}
	}
	return gio
}

// stateList names the templates of other state, past → present.
func stateList(o otherState) string {
	var l []string
	for i := range o.past {
		l = append(l, o.past[i]+" → "+o.present[i])
	}
	return strings.Join(l, ", ")
}

// hybrid fills in a hybrid stack: the KV cache on kvLayers, other state o on the rest.
// It writes layer_types when every layer has a KV cache or other state, and the conv
// templates when one is named so. genai's decoder-pipeline carries the other state only
// under the names it derives from past_key_names (derivedState); state so named is
// genai's to bind, other state gets one note.
func (gio *genaiIO) hybrid(o otherState, kvLayers []int64) {
	if o.pairs == 0 {
		return
	}
	n := gio.layers
	for _, ls := range o.layers {
		for l := range ls {
			n = max(n, l+1)
		}
	}
	gio.layers = n
	types := make([]string, n)
	for _, l := range kvLayers {
		types[l] = "full_attention"
	}
	for i, ls := range o.layers {
		kind := "linear_attention"
		if strings.Contains(strings.ToLower(o.past[i]), "conv") {
			kind = "conv"
		}
		for l := range ls {
			if types[l] == "" || (types[l] == "conv" && kind != "conv") {
				types[l] = kind
			}
		}
	}
	if !slices.Contains(types, "") {
		gio.layerTypes = types
	}
	for i := range o.past {
		if strings.Contains(strings.ToLower(o.past[i]), "conv") && gio.in.PastConvNames == "" {
			gio.in.PastConvNames, gio.out.PresentConvNames = o.past[i], o.present[i]
		}
	}
	pc, pr := derivedState(gio.in.PastKeyNames)
	cc, cr := derivedState(gio.out.PresentKeyNames)
	carried := pc != "" && cc != ""
	for i := range o.past {
		if !(o.past[i] == pc && o.present[i] == cc) && !(o.past[i] == pr && o.present[i] == cr) {
			carried = false
		}
	}
	if carried {
		gio.kv = append(gio.kv, o.inputs...)
		return
	}
	gio.stateInputs = o.inputs
	want := "no name genai derives, as past_key_names has no '.'"
	if pc != "" {
		want = fmt.Sprintf("%s / %s and %s / %s", pc, cc, pr, cr)
	}
	gio.notes = append(gio.notes, fmt.Sprintf("the model keeps %d state pairs besides its KV cache (%s): genai's decoder-pipeline carries such state only under the names it derives from past_key_names (%s); layer_types and past_conv_names are read by genai's lfm2 model alone. Rename them so, or feed them with the generator's extra inputs", o.pairs, stateList(o), want))
}

// through follows t back through Cast, Identity, Reshape, Squeeze and Unsqueeze nodes to a
// graph input; -1 when it reaches none.
func through(g *graph.Graph, t int) int {
	for steps := 0; steps < 4 && t >= 0; steps++ {
		if g.Tensors[t].Kind == graph.Input {
			return t
		}
		p := g.Tensors[t].Producer
		if p < 0 {
			return -1
		}
		n := &g.Nodes[p]
		switch n.OpType {
		case optype.Cast, optype.Identity, optype.Reshape, optype.Squeeze, optype.Unsqueeze:
			if n.Domain != "" || len(n.Inputs) == 0 {
				return -1
			}
			t = n.Inputs[0]
		default:
			return -1
		}
	}
	return -1
}

// embeddings lists the token embeddings: Gather nodes reading a [vocab, hidden] weight at
// indices that come from an integer graph input.
func embeddings(g *graph.Graph) (nodes []int) {
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.OpType != optype.Gather || n.Domain != "" || len(n.Inputs) < 2 || n.Inputs[0] < 0 || n.Inputs[1] < 0 {
			continue
		}
		w := &g.Tensors[n.Inputs[0]]
		if w.Kind != graph.Initializer || len(w.Shape) != 2 || n.AttrInt("axis", 0) != 0 {
			continue
		}
		if in := through(g, n.Inputs[1]); in >= 0 && (g.Tensors[in].DType == graph.Int64 || g.Tensors[in].DType == graph.Int32) {
			nodes = append(nodes, i)
		}
	}
	return nodes
}

// embeddingIDs is the graph input the first token embedding reads (-1: none).
func embeddingIDs(g *graph.Graph) int {
	for _, i := range embeddings(g) {
		return through(g, g.Nodes[i].Inputs[1])
	}
	return -1
}

// embedding returns the vocabulary and hidden sizes of the embedding that reads ids (0, 0
// when there is none or its shape is unknown).
func embedding(g *graph.Graph, ids int) (vocab, hidden int64) {
	if ids < 0 {
		return 0, 0
	}
	for _, i := range embeddings(g) {
		n := &g.Nodes[i]
		if through(g, n.Inputs[1]) != ids {
			continue
		}
		s := g.Tensors[n.Inputs[0]].Shape
		if s[0].Known() && s[1].Known() {
			return s[0].Value, s[1].Value
		}
	}
	return 0, 0
}

// attentionHeads finds the number of attention heads: the num_heads of an attention
// operator (com.microsoft's, ONNX's q_num_heads), else the most heads a Reshape splits a
// tensor into, [batch, seq, heads, headSize] (the queries; keys and values may have fewer
// heads). 0 when neither is found.
//
// A Reshape's split is the queries' only where heads × headSize is the model's width
// (hidden, when known): grouped-query exports also reshape the repeated keys to [batch,
// heads, total, headSize], whose axis 2 is the sequence length (the planned size, not a
// head count). Without hidden, or when no split matches it, the most heads found is taken.
func attentionHeads(g *graph.Graph, headSize, kvHeads, hidden int64) int64 {
	var best int64
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Domain == "com.microsoft" && strings.Contains(n.OpType, optype.Attention) {
			best = max(best, n.AttrInt("num_heads", 0))
		} else if n.Domain == "" && n.OpType == optype.Attention {
			best = max(best, n.AttrInt("q_num_heads", 0))
		}
	}
	if best > 0 || headSize <= 0 {
		return best
	}
	var width int64
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.OpType != optype.Reshape || n.Domain != "" || len(n.Outputs) == 0 || n.Outputs[0] < 0 {
			continue
		}
		dims := g.Tensors[n.Outputs[0]].Shape.Dims() // -1 where unknown
		if (len(dims) != 4 || dims[2] <= 0) && len(n.Inputs) > 1 && n.Inputs[1] >= 0 {
			dims = g.Tensors[n.Inputs[1]].Value // the target shape, when constant
		}
		if len(dims) != 4 || dims[3] != headSize || dims[2] <= 0 {
			continue
		}
		if h := dims[2]; kvHeads <= 0 || h%kvHeads == 0 {
			best = max(best, h)
			if hidden > 0 && h*headSize == hidden {
				width = max(width, h)
			}
		}
	}
	if width > 0 {
		return width
	}
	return best
}

// hfConfig is what genai_config.json takes from the model's own configuration: a Hugging
// Face config.json, or the genai_config.json the model builder wrote beside its model.
type hfConfig struct {
	vals map[string]int64
	eos  Tokens
	// share is the builder's search.past_present_share_buffer (nil: not said).
	share *bool
}

func (h hfConfig) get(key string) (int64, bool) {
	v, ok := h.vals[key]
	return v, ok
}

// hfKeys maps genai's names to config.json's, first found wins (GPT-2's n_positions,
// n_embd, n_head, n_layer; ChatGLM's seq_length, which genai's builder prefers).
var hfKeys = map[string][]string{
	"context_length":      {"seq_length", "max_position_embeddings", "n_positions"},
	"bos_token_id":        {"bos_token_id"},
	"pad_token_id":        {"pad_token_id"},
	"vocab_size":          {"vocab_size"},
	"hidden_size":         {"hidden_size", "n_embd"},
	"num_attention_heads": {"num_attention_heads", "n_head"},
	"num_hidden_layers":   {"num_hidden_layers", "n_layer"},
	"num_key_value_heads": {"num_key_value_heads"},
	"head_size":           {"head_dim"},
}

// readHFConfig reads the configuration given (--genai hf_config: a Hugging Face
// config.json or a genai_config.json; an error when it cannot be read) or, when none is,
// the genai_config.json and the config.json beside the model (each skipped when absent or
// not a JSON object; genai_config.json's values first, config.json fills the rest). A
// config.json's figures may be nested under text_config (multimodal models). It returns
// the values and the files read (", "-joined; "" for none). names name Options.HFConfig in
// the errors.
func readHFConfig(modelPath, given string, names diag.Names) (hfConfig, string, error) {
	h := hfConfig{vals: map[string]int64{}}
	var paths []string
	if given != "" {
		paths = []string{given}
	} else if modelPath != "" {
		dir := filepath.Dir(modelPath)
		paths = []string{filepath.Join(dir, "genai_config.json"), filepath.Join(dir, "config.json")}
	}
	var read []string
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			if given == "" && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return h, "", diag.Input("%s: %v", names.Name("HFConfig"), err).About(diag.Option, names.Name("HFConfig")).Wrap(err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			if given == "" {
				continue
			}
			return h, "", diag.Input("%s: %s is not a JSON object: %v", names.Name("HFConfig"), path, err).About(diag.Option, names.Name("HFConfig"))
		}
		if _, ok := raw["model"]; ok {
			h.readGenAI(raw)
		} else {
			h.readHF(raw)
			if r, ok := raw["text_config"]; ok {
				var text map[string]json.RawMessage
				if json.Unmarshal(r, &text) == nil {
					h.readHF(text)
				}
			}
		}
		read = append(read, path)
	}
	return h, strings.Join(read, ", "), nil
}

// readHF takes the values of a Hugging Face config object that are not known yet.
func (h *hfConfig) readHF(raw map[string]json.RawMessage) {
	keys := make([]string, 0, len(hfKeys))
	for k := range hfKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, known := h.vals[k]; known {
			continue
		}
		for _, name := range hfKeys[k] {
			var v int64
			if r, ok := raw[name]; ok && string(r) != "null" && json.Unmarshal(r, &v) == nil {
				h.vals[k] = v
				break
			}
		}
	}
	var eos Tokens
	if r, ok := raw["eos_token_id"]; ok && len(h.eos) == 0 && json.Unmarshal(r, &eos) == nil && len(eos) > 0 {
		h.eos = eos
	}
}

// readGenAI takes the values of a genai_config.json (model, model.decoder, search) that are
// not known yet.
func (h *hfConfig) readGenAI(raw map[string]json.RawMessage) {
	var c struct {
		Model struct {
			ContextLength *int64 `json:"context_length"`
			VocabSize     *int64 `json:"vocab_size"`
			BOS           *int64 `json:"bos_token_id"`
			EOS           Tokens `json:"eos_token_id"`
			Pad           *int64 `json:"pad_token_id"`
			Decoder       struct {
				HeadSize *int64 `json:"head_size"`
				Hidden   *int64 `json:"hidden_size"`
				Heads    *int64 `json:"num_attention_heads"`
				Layers   *int64 `json:"num_hidden_layers"`
				KVHeads  *int64 `json:"num_key_value_heads"`
			} `json:"decoder"`
		} `json:"model"`
		Search struct {
			Share *bool `json:"past_present_share_buffer"`
		} `json:"search"`
	}
	b, _ := json.Marshal(raw)
	if json.Unmarshal(b, &c) != nil {
		return
	}
	m, d := c.Model, c.Model.Decoder
	for k, v := range map[string]*int64{"context_length": m.ContextLength, "vocab_size": m.VocabSize, "bos_token_id": m.BOS,
		"pad_token_id": m.Pad, "head_size": d.HeadSize, "hidden_size": d.Hidden, "num_attention_heads": d.Heads,
		"num_hidden_layers": d.Layers, "num_key_value_heads": d.KVHeads} {
		if _, known := h.vals[k]; v != nil && !known {
			h.vals[k] = *v
		}
	}
	if len(h.eos) == 0 && len(m.EOS) > 0 {
		h.eos = m.EOS
	}
	if h.share == nil {
		h.share = c.Search.Share
	}
}
