package triton

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/atomicfs"
	"github.com/onnxpart/onnxpart/internal/outdir"
)

// Dir is the Triton model repository's directory name inside an output directory.
const Dir = outdir.TritonDir

// Options control the Triton model repository.
type Options struct {
	// Name is the ensemble model's name (default: the model file's name without .onnx);
	// stage models are named <Name>_stage<i>. Names are sanitised to [A-Za-z0-9_-].
	Name string
	// GPUs maps device names to the CUDA device index that instance_group.gpus pins a
	// stage to. Devices not listed get the manifest's cuda_device_id, or else the index their name gives ("gpu1", "cuda:1",
	// "device-2") when every such GPU device has a distinct one, or else their rank among
	// the GPU devices in order of first use.
	GPUs map[string]int
	// Copy copies the stage files into the repository; by default they are hard-linked
	// (and copied only where linking fails, e.g. across file systems).
	Copy bool
	// Force replaces an existing repository directory.
	Force bool
	// MaxBatch is the max_batch_size of a model whose every input and output leads with the
	// same symbolic batch dim (see tritonBatch); 0 takes the size the plan bound that dim
	// to (Manifest.Model.Dims). Given, it also marks the leading dim as the batch whatever
	// its name, and a model that cannot batch so is an error.
	MaxBatch int
	// Names are the caller's names of these options, by field ("Force": "--force",
	// "MaxBatch": "--max-batch"), and of emit's FreezeDims ("--freeze-dims"), for errors
	// to name; without a name they say "Options.Force". The command passes its flags.
	Names diag.Names
}

// Model is one model of a Triton repository: a stage, or the ensemble (Stage −1)
// that chains them.
type Model struct {
	Name  string
	Stage int
	// Config is the model's config.pbtxt.
	Config []byte
}

// tritonErrorf is a manifest that cannot be served by Triton as it stands (a provider
// without a Triton setting, a tensor of unknown rank or of an element type Triton lacks, a
// model output that is a model input): a *diag.Error of kind input, "triton: MSG".
func tritonErrorf(format string, a ...any) *diag.Error {
	return diag.Input("triton: "+format, a...)
}

// Write writes a Triton model repository for the stages in stageDir (the directory
// holding the manifest's stage files) into repoDir:
//
//	repoDir/<name>_stage<i>/config.pbtxt       platform "onnxruntime_onnx", instance group on the stage's device
//	repoDir/<name>_stage<i>/1/model.onnx       the stage file (+ its external data, under its own name)
//	repoDir/<name>/config.pbtxt                platform "ensemble": the steps wired by tensor name
//	repoDir/<name>/1/                          (empty, as Triton wants for an ensemble)
//
// so that `tritonserver --model-repository repoDir` serves the pipeline as model <name>.
// The repository is written beside repoDir and renamed into place; an existing repoDir is
// refused unless opt.Force.
func Write(m *emit.Manifest, stageDir, repoDir string, opt Options) (err error) {
	if m != nil && m.Batch != nil && len(m.Batch.Routes) > 1 {
		if m.Batch.Route != 0 {
			// A route's stages are served from the top directory's repository (its ensemble
			// takes the whole batch): a repository per route would repeat their names.
			return nil
		}
		return writeBatched(m, stageDir, repoDir, opt)
	}
	models, err := Models(m, opt)
	if err != nil {
		return err
	}
	var files []repoFile
	for _, tm := range models {
		if tm.Stage < 0 {
			files = append(files, repoFile{model: tm})
			continue
		}
		fs, err := stageFiles(m.Stages[tm.Stage], stageDir, tm)
		if err != nil {
			return err
		}
		files = append(files, fs...)
	}
	return writeRepo(repoDir, files, opt)
}

// repoFile is a model's config (file "" ) or one file of its version 1: src copied or
// linked, or data written.
type repoFile struct {
	model Model
	file  string // the name inside the model's directory 1/ ("": the model's config only)
	src   string
	data  []byte
}

// stageFiles checks a stage's files in stageDir and lists them for model tm.
func stageFiles(st emit.Stage, stageDir string, tm Model) ([]repoFile, error) {
	for _, f := range []string{st.File, st.DataFile} {
		if f == "" {
			continue
		}
		if filepath.Base(f) != f || f == "." || f == ".." {
			return nil, tritonErrorf("stage %d: file %q is not a plain file name", st.Index, f).About(diag.Stage, strconv.Itoa(st.Index))
		}
		if fi, err := os.Stat(filepath.Join(stageDir, f)); err != nil {
			return nil, diag.Input("triton: stage %d: %w", st.Index, err).About(diag.Stage, strconv.Itoa(st.Index))
		} else if !fi.Mode().IsRegular() {
			return nil, tritonErrorf("stage %d: %s is not a regular file", st.Index, filepath.Join(stageDir, f)).About(diag.Stage, strconv.Itoa(st.Index))
		}
	}
	out := []repoFile{{model: tm}, {model: tm, file: "model.onnx", src: filepath.Join(stageDir, st.File)}}
	if st.DataFile != "" {
		// The stage model names its data file by this relative location.
		out = append(out, repoFile{model: tm, file: st.DataFile, src: filepath.Join(stageDir, st.DataFile)})
	}
	return out, nil
}

// writeRepo writes the repository's files beside repoDir and renames it into place.
func writeRepo(repoDir string, files []repoFile, opt Options) (err error) {
	abs, err := filepath.Abs(repoDir)
	if err != nil {
		return err
	}
	exists := false
	switch fi, err := os.Lstat(abs); {
	case err == nil && !fi.IsDir():
		return diag.Input("triton: %s exists and is not a directory", repoDir)
	case err == nil && !opt.Force:
		return diag.Input("output directory %s already exists (use %s to replace it)", repoDir, opt.Names.Name("Force"))
	case err == nil:
		exists = true
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	parent := filepath.Dir(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+outdir.TempBase(abs)+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	for _, f := range files {
		md := filepath.Join(tmp, f.model.Name)
		switch {
		case f.file == "":
			if err := os.MkdirAll(filepath.Join(md, "1"), 0o755); err != nil {
				return err
			}
			if err := outdir.WriteFileSync(filepath.Join(md, "config.pbtxt"), f.model.Config); err != nil {
				return err
			}
		case f.src != "":
			if err := placeFile(f.src, filepath.Join(md, "1", f.file), opt.Copy); err != nil {
				return err
			}
		default:
			if err := outdir.WriteFileSync(filepath.Join(md, "1", f.file), f.data); err != nil {
				return err
			}
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if exists {
		old, err := atomicfs.ReplaceDir(tmp, abs, nil)
		if err != nil {
			return err
		}
		return os.RemoveAll(old)
	}
	return os.Rename(tmp, abs)
}

// placeFile hard-links src to dst, or copies it when asked or when linking fails.
func placeFile(src, dst string, copyFile bool) error {
	if !copyFile {
		if err := os.Link(src, dst); err == nil {
			return nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Models builds the config.pbtxt of every model of the repository: one per stage,
// in stage order, then the ensemble.
func Models(m *emit.Manifest, opt Options) ([]Model, error) {
	if m == nil || len(m.Stages) == 0 {
		return nil, tritonErrorf("the manifest has no stages")
	}
	base := opt.Name
	if base == "" {
		base = strings.TrimSuffix(m.Model.File, filepath.Ext(m.Model.File))
	}
	base = tritonName(base)
	gpus := gpuIndices(m, opt.GPUs)
	maxBatch, err := tritonBatch(m, opt.MaxBatch, opt.Names)
	if err != nil {
		return nil, err
	}
	var models []Model
	names := make([]string, len(m.Stages))
	for i, st := range m.Stages {
		names[i] = fmt.Sprintf("%s_stage%d", base, st.Index)
		cfg, err := stageConfig(m, i, names[i], gpus, maxBatch)
		if err != nil {
			return nil, err
		}
		models = append(models, Model{Name: names[i], Stage: i, Config: cfg})
	}
	cfg, err := ensembleConfig(m, base, names, maxBatch)
	if err != nil {
		return nil, err
	}
	return append(models, Model{Name: base, Stage: -1, Config: cfg}), nil
}

// tritonName makes a model (directory) name: letters, digits, '_' and '-'; anything else
// becomes '_'.
func tritonName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	n := strings.TrimLeft(b.String(), "-")
	if n == "" || strings.Trim(n, "_") == "" {
		return "onnxpart"
	}
	return n
}

// Execution providers and the Triton ONNX Runtime backend settings that select them.
type tritonProvider struct {
	gpu         bool
	accelerator string // execution_accelerators entry, "" for the default provider of the kind
}

var tritonProviders = map[string]tritonProvider{
	"CPUExecutionProvider":      {gpu: false},
	"CUDAExecutionProvider":     {gpu: true},
	"TensorrtExecutionProvider": {gpu: true, accelerator: "tensorrt"},
	"OpenVINOExecutionProvider": {gpu: false, accelerator: "openvino"},
}

func providerOf(st emit.Stage) (tritonProvider, error) {
	p := st.Provider
	if p == "" {
		p = emit.DefaultProvider
	}
	tp, ok := tritonProviders[p]
	if !ok {
		return tp, tritonErrorf("stage %d: execution provider %s has no Triton ONNX Runtime backend setting (supported: CPUExecutionProvider, CUDAExecutionProvider, TensorrtExecutionProvider, OpenVINOExecutionProvider)", st.Index, p).About(diag.Stage, strconv.Itoa(st.Index))
	}
	return tp, nil
}

// deviceNumber matches device names that carry a CUDA index: gpu0, cuda:1, GPU#2, device-3.
// Names like h100 or a100 are products, not indices, and do not match.
var deviceNumber = regexp.MustCompile(`(?i)^(?:gpu|cuda|device|dev)[:#_-]?(\d+)$`)

// gpuIndices assigns a CUDA device index to every device a GPU stage runs on (see
// Options.GPUs).
func gpuIndices(m *emit.Manifest, explicit map[string]int) map[string]int {
	var devs []string
	seen := map[string]bool{}
	for _, st := range m.Stages {
		if tp, err := providerOf(st); err == nil && tp.gpu && !seen[st.Device] {
			seen[st.Device] = true
			devs = append(devs, st.Device)
		}
	}
	out := map[string]int{}
	parsed := map[string]int{}
	used := map[int]bool{}
	byName := true
	ordinal := map[string]int{}
	for _, di := range m.Devices {
		if di.CUDADeviceID != nil {
			ordinal[di.Name] = *di.CUDADeviceID
		}
	}
	for _, d := range devs {
		if i, ok := explicit[d]; ok {
			out[d] = i
			continue
		}
		if i, ok := ordinal[d]; ok { // the planner's device-to-ordinal map
			out[d] = i
			continue
		}
		sm := deviceNumber.FindStringSubmatch(d)
		if sm == nil {
			byName = false
			continue
		}
		i, err := strconv.Atoi(sm[1])
		if err != nil || used[i] {
			byName = false
			continue
		}
		used[i] = true
		parsed[d] = i
	}
	for rank, d := range devs {
		if _, ok := out[d]; ok {
			continue
		}
		if byName {
			out[d] = parsed[d]
		} else {
			out[d] = rank
		}
	}
	return out
}

// tritonBatch decides max_batch_size (0: no batching). Triton batches a model along an
// implicit first dim of every input and output, so the repository batches when one named
// symbolic dim leads every model input, model output and stage boundary tensor, and it is
// a batch: by its name, or because maxBatch says so. The size is maxBatch, else the size
// the plan bound the dim to; a dim nothing sizes (a split with no --dim) is not batched.
// An explicit maxBatch the model cannot honour is an error; names name the options in it.
func tritonBatch(m *emit.Manifest, maxBatch int, names diag.Names) (int, error) {
	explicit := maxBatch > 0
	if maxBatch < 0 || maxBatch > math.MaxInt32 {
		return 0, tritonErrorf("max_batch_size %d: want a size from 1 to %d", maxBatch, math.MaxInt32)
	}
	p := emit.LeadingDim(m)
	if p == "" {
		if explicit {
			return 0, tritonErrorf("max_batch_size %d: the model's first input has no leading symbolic dimension to batch along (stage files written with %s keep none)", maxBatch, names.Or("FreezeDims", "emit.Options.FreezeDims"))
		}
		return 0, nil
	}
	if !explicit {
		if emit.BatchDim(m) == "" {
			return 0, nil
		}
		if v, ok := m.Model.Dims[p]; ok && v > 0 && v <= math.MaxInt32 {
			maxBatch = int(v)
		} else {
			return 0, nil
		}
	}
	type tensorAt struct {
		what string
		t    emit.TensorRef
	}
	var all []tensorAt
	for _, t := range m.Model.Inputs {
		all = append(all, tensorAt{"model input", t})
	}
	for _, t := range m.Model.Outputs {
		all = append(all, tensorAt{"model output", t})
	}
	for _, st := range m.Stages {
		for _, t := range st.Inputs {
			all = append(all, tensorAt{fmt.Sprintf("stage %d input", st.Index), t})
		}
		for _, t := range st.Outputs {
			all = append(all, tensorAt{fmt.Sprintf("stage %d output", st.Index), t})
		}
	}
	for _, x := range all {
		if s := x.t.Shape; len(s) > 0 && !s[0].Known() && s[0].Param == p {
			continue
		}
		if !explicit {
			return 0, nil
		}
		return 0, tritonErrorf("max_batch_size %d: %s %q has shape %s, which does not lead with the batch dimension %s", maxBatch, x.what, x.t.Name, graph.Shape(x.t.Shape), p).About(diag.Tensor, x.t.Name)
	}
	return maxBatch, nil
}

// tritonTypes maps onnxpart's element type names to Triton's data types.
var tritonTypes = map[string]string{
	"bool": "TYPE_BOOL", "uint8": "TYPE_UINT8", "uint16": "TYPE_UINT16", "uint32": "TYPE_UINT32", "uint64": "TYPE_UINT64",
	"int8": "TYPE_INT8", "int16": "TYPE_INT16", "int32": "TYPE_INT32", "int64": "TYPE_INT64",
	"float16": "TYPE_FP16", "float32": "TYPE_FP32", "float64": "TYPE_FP64", "bfloat16": "TYPE_BF16", "string": "TYPE_STRING",
}

// pbtxt writes protobuf text format with two-space indentation.
type pbtxt struct {
	b      strings.Builder
	indent int
}

func (p *pbtxt) line(format string, a ...any) {
	p.b.WriteString(strings.Repeat("  ", p.indent))
	fmt.Fprintf(&p.b, format, a...)
	p.b.WriteByte('\n')
}

func (p *pbtxt) open(format string, a ...any) {
	p.line(format, a...)
	p.indent++
}

func (p *pbtxt) close(s string) {
	p.indent--
	p.line("%s", s)
}

// pbQuote quotes s as a text-format string: quotes, backslashes and control bytes are
// escaped, and so are the bytes of invalid UTF-8.
func pbQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\%03o`, s[i])
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\%03o`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// tensors writes an input or output list. Symbolic dimensions are -1. Triton wants
// non-empty dims: a scalar is declared as dims [1], reshaped to [] for a stage model (whose
// ONNX tensor is a scalar); an ensemble passes tensors on as a client would, so its own
// scalars stay [1]. A batched model's dims leave out the leading batch dim (tritonBatch
// made sure every tensor has it).
func (p *pbtxt) tensors(field string, ts []emit.TensorRef, what string, reshape, batched bool) error {
	if len(ts) == 0 {
		return nil
	}
	p.open("%s [", field)
	for i, t := range ts {
		dt, ok := tritonTypes[t.DType]
		if !ok {
			return tritonErrorf("%s: tensor %q has element type %s, which Triton does not serve", what, t.Name, t.DType).About(diag.Tensor, t.Name)
		}
		if t.Shape == nil {
			return tritonErrorf("%s: tensor %q has no inferred shape, and Triton needs its dims (bind the model's symbolic dimensions when loading it)", what, t.Name).About(diag.Tensor, t.Name)
		}
		p.open("{")
		p.line("name: %s", pbQuote(t.Name))
		p.line("data_type: %s", dt)
		shape := t.Shape
		if batched {
			shape = shape[1:]
		}
		if len(shape) == 0 {
			p.line("dims: [ 1 ]")
			if reshape {
				p.line("reshape: { shape: [ ] }")
			}
		} else {
			dims := make([]string, len(shape))
			for j, d := range shape {
				if d.Known() {
					dims[j] = strconv.FormatInt(d.Value, 10)
				} else {
					dims[j] = "-1"
				}
			}
			p.line("dims: [ %s ]", strings.Join(dims, ", "))
		}
		if i < len(ts)-1 {
			p.close("},")
		} else {
			p.close("}")
		}
	}
	p.close("]")
	return nil
}

func stageConfig(m *emit.Manifest, i int, name string, gpus map[string]int, maxBatch int) ([]byte, error) {
	st := m.Stages[i]
	tp, err := providerOf(st)
	if err != nil {
		return nil, err
	}
	var p pbtxt
	prov := st.Provider
	if prov == "" {
		prov = emit.DefaultProvider
	}
	p.line("# onnxpart: stage %d of %s (%s), on %s with %s", st.Index, oneLine(m.Model.File), st.File, oneLine(st.Device), prov)
	p.line("name: %s", pbQuote(name))
	p.line(`platform: "onnxruntime_onnx"`)
	p.line("max_batch_size: %d", maxBatch)
	what := fmt.Sprintf("stage %d", st.Index)
	if err := p.tensors("input", st.Inputs, what, true, maxBatch > 0); err != nil {
		return nil, err
	}
	if err := p.tensors("output", st.Outputs, what, true, maxBatch > 0); err != nil {
		return nil, err
	}
	if maxBatch > 0 {
		p.line("dynamic_batching { }")
	}
	p.open("instance_group [")
	p.open("{")
	if tp.gpu {
		p.line("kind: KIND_GPU")
		p.line("count: 1")
		p.line("gpus: [ %d ]", gpus[st.Device])
	} else {
		p.line("kind: KIND_CPU")
		p.line("count: 1")
	}
	p.close("}")
	p.close("]")
	if tp.accelerator != "" {
		field := "cpu_execution_accelerator"
		if tp.gpu {
			field = "gpu_execution_accelerator"
		}
		p.open("optimization {")
		p.open("execution_accelerators {")
		p.open("%s [", field)
		p.open("{")
		p.line("name: %s", pbQuote(tp.accelerator))
		p.close("}")
		p.close("]")
		p.close("}")
		p.close("}")
	}
	return []byte(p.b.String()), nil
}

// ensembleConfig wires the stages by tensor name: every stage input is a model input or
// the output of an earlier stage; ensemble tensors keep the model's tensor names. Model
// inputs that no stage reads are left out (Triton refuses ensemble inputs no step maps).
func ensembleConfig(m *emit.Manifest, name string, stageNames []string, maxBatch int) ([]byte, error) {
	inputs := map[string]bool{}
	for _, t := range m.Model.Inputs {
		inputs[t.Name] = true
	}
	read := map[string]bool{}
	produced := map[string]int{}
	for i, st := range m.Stages {
		for _, t := range st.Inputs {
			read[t.Name] = true
			if _, ok := produced[t.Name]; !ok && !inputs[t.Name] {
				return nil, tritonErrorf("stage %d reads %q, which is neither a model input nor an output of an earlier stage", st.Index, t.Name).About(diag.Tensor, t.Name)
			}
		}
		for _, t := range st.Outputs {
			if inputs[t.Name] {
				return nil, tritonErrorf("model output %q is also a model input; a Triton ensemble cannot pass an input through as an output", t.Name).About(diag.Tensor, t.Name)
			}
			if j, ok := produced[t.Name]; ok {
				return nil, tritonErrorf("tensor %q is an output of stages %d and %d", t.Name, m.Stages[j].Index, st.Index).About(diag.Tensor, t.Name)
			}
			produced[t.Name] = i
		}
	}
	for _, t := range m.Model.Outputs {
		if inputs[t.Name] {
			return nil, tritonErrorf("model output %q is also a model input; a Triton ensemble cannot pass an input through as an output", t.Name).About(diag.Tensor, t.Name)
		}
		if _, ok := produced[t.Name]; !ok {
			return nil, tritonErrorf("model output %q is produced by no stage", t.Name).About(diag.Tensor, t.Name)
		}
	}
	var used []emit.TensorRef
	for _, t := range m.Model.Inputs {
		if read[t.Name] {
			used = append(used, t)
		}
	}
	var p pbtxt
	p.line("# onnxpart: %s as a pipeline of %d stage%s", oneLine(m.Model.File), len(m.Stages), plural(len(m.Stages)))
	p.line("name: %s", pbQuote(name))
	p.line(`platform: "ensemble"`)
	p.line("max_batch_size: %d", maxBatch) // an ensemble schedules its steps; only they batch
	if err := p.tensors("input", used, "model", false, maxBatch > 0); err != nil {
		return nil, err
	}
	if err := p.tensors("output", m.Model.Outputs, "model", false, maxBatch > 0); err != nil {
		return nil, err
	}
	p.open("ensemble_scheduling {")
	p.open("step [")
	for i, st := range m.Stages {
		p.open("{")
		p.line("model_name: %s", pbQuote(stageNames[i]))
		p.line("model_version: -1")
		for _, t := range st.Inputs {
			p.line("input_map { key: %s value: %s }", pbQuote(t.Name), pbQuote(t.Name))
		}
		for _, t := range st.Outputs {
			p.line("output_map { key: %s value: %s }", pbQuote(t.Name), pbQuote(t.Name))
		}
		if i < len(m.Stages)-1 {
			p.close("},")
		} else {
			p.close("}")
		}
	}
	p.close("]")
	p.close("}")
	return []byte(p.b.String()), nil
}

// oneLine keeps a comment on one line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
