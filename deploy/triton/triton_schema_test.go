package triton

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The part of Triton's ModelConfig (common/protobuf/model_config.proto, package inference)
// that onnxpart writes, with the field names, numbers and pbEnum values of the documented
// schema. config.pbtxt files are parsed against it with prototext, so a misspelt field, an
// unknown pbEnum value or a wrongly typed value fails the tests as it would fail Triton.

func pbField(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, label descriptorpb.FieldDescriptorProto_Label, typeName string) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(), Label: label.Enum(),
		JsonName: proto.String(name)}
	if typeName != "" {
		f.TypeName = proto.String(typeName)
	}
	return f
}

const (
	pbOptional = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
	pbRepeated = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	pbTString  = descriptorpb.FieldDescriptorProto_TYPE_STRING
	pbTInt32   = descriptorpb.FieldDescriptorProto_TYPE_INT32
	pbTInt64   = descriptorpb.FieldDescriptorProto_TYPE_INT64
	pbTBool    = descriptorpb.FieldDescriptorProto_TYPE_BOOL
	pbTEnum    = descriptorpb.FieldDescriptorProto_TYPE_ENUM
	pbTMessage = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
)

func pbMessage(name string, fields ...*descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
	return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: fields}
}

func pbEnum(name string, values ...string) *descriptorpb.EnumDescriptorProto {
	e := &descriptorpb.EnumDescriptorProto{Name: proto.String(name)}
	for i, v := range values {
		e.Value = append(e.Value, &descriptorpb.EnumValueDescriptorProto{Name: proto.String(v), Number: proto.Int32(int32(i))})
	}
	return e
}

// pbStringMap is a map<string, string> field's entry message.
func pbStringMap(entry string) *descriptorpb.DescriptorProto {
	m := pbMessage(entry, pbField("key", 1, pbTString, pbOptional, ""), pbField("value", 2, pbTString, pbOptional, ""))
	m.Options = &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)}
	return m
}

var tritonConfigDesc protoreflect.MessageDescriptor

func tritonSchema(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	if tritonConfigDesc != nil {
		return tritonConfigDesc
	}
	dataType := pbEnum("DataType", "TYPE_INVALID", "TYPE_BOOL", "TYPE_UINT8", "TYPE_UINT16", "TYPE_UINT32", "TYPE_UINT64",
		"TYPE_INT8", "TYPE_INT16", "TYPE_INT32", "TYPE_INT64", "TYPE_FP16", "TYPE_FP32", "TYPE_FP64", "TYPE_STRING", "TYPE_BF16")
	group := pbMessage("ModelInstanceGroup",
		pbField("name", 1, pbTString, pbOptional, ""),
		pbField("kind", 4, pbTEnum, pbOptional, ".inference.ModelInstanceGroup.Kind"),
		pbField("count", 2, pbTInt32, pbOptional, ""),
		pbField("gpus", 3, pbTInt32, pbRepeated, ""))
	group.EnumType = []*descriptorpb.EnumDescriptorProto{pbEnum("Kind", "KIND_AUTO", "KIND_GPU", "KIND_CPU", "KIND_MODEL")}
	reshape := pbMessage("ModelTensorReshape", pbField("shape", 1, pbTInt64, pbRepeated, ""))
	input := pbMessage("ModelInput",
		pbField("name", 1, pbTString, pbOptional, ""),
		pbField("data_type", 2, pbTEnum, pbOptional, ".inference.DataType"),
		pbField("dims", 4, pbTInt64, pbRepeated, ""),
		pbField("reshape", 5, pbTMessage, pbOptional, ".inference.ModelTensorReshape"),
		pbField("optional", 8, pbTBool, pbOptional, ""))
	output := pbMessage("ModelOutput",
		pbField("name", 1, pbTString, pbOptional, ""),
		pbField("data_type", 2, pbTEnum, pbOptional, ".inference.DataType"),
		pbField("dims", 3, pbTInt64, pbRepeated, ""),
		pbField("reshape", 5, pbTMessage, pbOptional, ".inference.ModelTensorReshape"))
	accel := pbMessage("Accelerator",
		pbField("name", 1, pbTString, pbOptional, ""),
		pbField("parameters", 2, pbTMessage, pbRepeated, ".inference.ModelOptimizationPolicy.ExecutionAccelerators.Accelerator.ParametersEntry"))
	accel.NestedType = []*descriptorpb.DescriptorProto{pbStringMap("ParametersEntry")}
	accels := pbMessage("ExecutionAccelerators",
		pbField("gpu_execution_accelerator", 1, pbTMessage, pbRepeated, ".inference.ModelOptimizationPolicy.ExecutionAccelerators.Accelerator"),
		pbField("cpu_execution_accelerator", 2, pbTMessage, pbRepeated, ".inference.ModelOptimizationPolicy.ExecutionAccelerators.Accelerator"))
	accels.NestedType = []*descriptorpb.DescriptorProto{accel}
	opt := pbMessage("ModelOptimizationPolicy",
		pbField("execution_accelerators", 4, pbTMessage, pbOptional, ".inference.ModelOptimizationPolicy.ExecutionAccelerators"))
	opt.NestedType = []*descriptorpb.DescriptorProto{accels}
	step := pbMessage("Step",
		pbField("model_name", 1, pbTString, pbOptional, ""),
		pbField("model_version", 2, pbTInt64, pbOptional, ""),
		pbField("input_map", 3, pbTMessage, pbRepeated, ".inference.ModelEnsembling.Step.InputMapEntry"),
		pbField("output_map", 4, pbTMessage, pbRepeated, ".inference.ModelEnsembling.Step.OutputMapEntry"))
	step.NestedType = []*descriptorpb.DescriptorProto{pbStringMap("InputMapEntry"), pbStringMap("OutputMapEntry")}
	ens := pbMessage("ModelEnsembling", pbField("step", 1, pbTMessage, pbRepeated, ".inference.ModelEnsembling.Step"))
	ens.NestedType = []*descriptorpb.DescriptorProto{step}
	batching := pbMessage("ModelDynamicBatching",
		pbField("preferred_batch_size", 1, pbTInt32, pbRepeated, ""),
		pbField("max_queue_delay_microseconds", 2, pbTInt64, pbOptional, ""),
		pbField("preserve_ordering", 3, pbTBool, pbOptional, ""))
	config := pbMessage("ModelConfig",
		pbField("name", 1, pbTString, pbOptional, ""),
		pbField("platform", 2, pbTString, pbOptional, ""),
		pbField("backend", 17, pbTString, pbOptional, ""),
		pbField("max_batch_size", 4, pbTInt32, pbOptional, ""),
		pbField("input", 5, pbTMessage, pbRepeated, ".inference.ModelInput"),
		pbField("output", 6, pbTMessage, pbRepeated, ".inference.ModelOutput"),
		pbField("optimization", 12, pbTMessage, pbOptional, ".inference.ModelOptimizationPolicy"),
		pbField("dynamic_batching", 11, pbTMessage, pbOptional, ".inference.ModelDynamicBatching"),
		pbField("ensemble_scheduling", 15, pbTMessage, pbOptional, ".inference.ModelEnsembling"),
		pbField("instance_group", 7, pbTMessage, pbRepeated, ".inference.ModelInstanceGroup"),
		pbField("default_model_filename", 8, pbTString, pbOptional, ""))
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("model_config_subset.proto"), Package: proto.String("inference"), Syntax: proto.String("proto3"),
		EnumType:    []*descriptorpb.EnumDescriptorProto{dataType},
		MessageType: []*descriptorpb.DescriptorProto{group, reshape, input, output, opt, ens, batching, config},
	}
	f, err := protodesc.NewFile(fd, nil)
	if err != nil {
		t.Fatalf("Triton schema: %v", err)
	}
	tritonConfigDesc = f.Messages().ByName("ModelConfig")
	return tritonConfigDesc
}

// tritonTensor is an input or output of a parsed config: the data type, the dims clients
// see, and the reshape the backend applies ("" for none).
type tritonTensor struct {
	dtype   string
	dims    string
	reshape string
}

// api is what an ensemble compares: the type and the dims as a client sends them.
func (tt tritonTensor) api() tritonTensor { return tritonTensor{dtype: tt.dtype, dims: tt.dims} }

// tritonConfig is a config.pbtxt parsed against the schema.
type tritonConfig struct {
	msg      protoreflect.Message
	name     string
	platform string
	// maxBatch is max_batch_size; dynamic says whether dynamic_batching is set.
	maxBatch int64
	dynamic  bool
	inputs   map[string]tritonTensor
	outputs  map[string]tritonTensor
	inOrder  []string
	outOrder []string
}

func parseTritonConfig(t testing.TB, data []byte) *tritonConfig {
	t.Helper()
	msg := dynamicpb.NewMessage(tritonSchema(t))
	if err := (prototext.UnmarshalOptions{}).Unmarshal(data, msg); err != nil {
		t.Fatalf("config.pbtxt does not parse as a Triton ModelConfig: %v\n%s", err, data)
	}
	c := &tritonConfig{msg: msg, inputs: map[string]tritonTensor{}, outputs: map[string]tritonTensor{}}
	fields := msg.Descriptor().Fields()
	c.name = msg.Get(fields.ByName("name")).String()
	c.platform = msg.Get(fields.ByName("platform")).String()
	c.maxBatch = msg.Get(fields.ByName("max_batch_size")).Int()
	c.dynamic = msg.Has(fields.ByName("dynamic_batching"))
	if c.dynamic && msg.Has(fields.ByName("ensemble_scheduling")) {
		t.Errorf("config %s sets both dynamic_batching and ensemble_scheduling (one scheduling choice)", c.name)
	}
	read := func(field string, into map[string]tritonTensor, order *[]string) {
		l := msg.Get(fields.ByName(protoreflect.Name(field))).List()
		for i := 0; i < l.Len(); i++ {
			e := l.Get(i).Message()
			ef := e.Descriptor().Fields()
			name := e.Get(ef.ByName("name")).String()
			dt := ef.ByName("data_type").Enum().Values().ByNumber(e.Get(ef.ByName("data_type")).Enum()).Name()
			dl := e.Get(ef.ByName("dims")).List()
			var dims []string
			for j := 0; j < dl.Len(); j++ {
				dims = append(dims, fmt.Sprint(dl.Get(j).Int()))
			}
			tt := tritonTensor{dtype: string(dt), dims: strings.Join(dims, ",")}
			if len(dims) == 0 {
				t.Errorf("config %s: %s %q has empty dims", c.name, field, name)
			}
			if e.Has(ef.ByName("reshape")) {
				rl := e.Get(ef.ByName("reshape")).Message()
				sl := rl.Get(rl.Descriptor().Fields().ByName("shape")).List()
				var rs []string
				for j := 0; j < sl.Len(); j++ {
					rs = append(rs, fmt.Sprint(sl.Get(j).Int()))
				}
				tt.reshape = "[" + strings.Join(rs, ",") + "]"
			}
			if _, dup := into[name]; dup {
				t.Errorf("config %s: %s %q declared twice", c.name, field, name)
			}
			into[name] = tt
			*order = append(*order, name)
		}
	}
	read("input", c.inputs, &c.inOrder)
	read("output", c.outputs, &c.outOrder)
	return c
}

// steps returns the ensemble's steps: model name, input_map and output_map.
func (c *tritonConfig) steps() []tritonStep {
	f := c.msg.Descriptor().Fields().ByName("ensemble_scheduling")
	if !c.msg.Has(f) {
		return nil
	}
	es := c.msg.Get(f).Message()
	l := es.Get(es.Descriptor().Fields().ByName("step")).List()
	var out []tritonStep
	for i := 0; i < l.Len(); i++ {
		s := l.Get(i).Message()
		sf := s.Descriptor().Fields()
		st := tritonStep{model: s.Get(sf.ByName("model_name")).String(), version: s.Get(sf.ByName("model_version")).Int(),
			in: map[string]string{}, out: map[string]string{}}
		for _, m := range []struct {
			field string
			into  map[string]string
		}{{"input_map", st.in}, {"output_map", st.out}} {
			s.Get(sf.ByName(protoreflect.Name(m.field))).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				m.into[k.String()] = v.String()
				return true
			})
		}
		out = append(out, st)
	}
	return out
}

type tritonStep struct {
	model   string
	version int64
	in, out map[string]string // model tensor → ensemble tensor
}

// checkTritonRepo checks a whole repository the way Triton's ensemble loader does: the
// ensemble names existing models, batches only if every step model batches at least as
// much (and no step batches when the ensemble does not: their dims would disagree), every step input is mapped to an ensemble tensor that
// is an ensemble input or some step's output (with the same type and dims), no ensemble
// tensor is produced twice, every ensemble input is used and every ensemble output
// produced, the ensemble reshapes nothing, and every step's inputs are all mapped. It
// returns the ensemble's name.
func checkTritonRepo(t testing.TB, configs map[string]*tritonConfig) string {
	t.Helper()
	var ensembles []string
	for name, c := range configs {
		if c.name != name {
			t.Errorf("model directory %q holds config named %q", name, c.name)
		}
		if c.platform == "ensemble" {
			ensembles = append(ensembles, name)
		}
	}
	if len(ensembles) != 1 {
		t.Fatalf("%d ensembles, want 1: %v", len(ensembles), ensembles)
	}
	if steps := configs[ensembles[0]].steps(); len(steps) != len(configs)-1 {
		t.Errorf("%d steps for %d stage models", len(steps), len(configs)-1)
	}
	checkEnsemble(t, configs, ensembles[0])
	return ensembles[0]
}

// dimsFit says whether a tensor of dims got fits dims want, as Triton's ensemble loader
// compares them: the same rank, and -1 on either side matches any size.
func dimsFit(got, want tritonTensor) bool {
	if got.dtype != want.dtype {
		return false
	}
	g, w := strings.Split(got.dims, ","), strings.Split(want.dims, ",")
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		if g[i] != w[i] && g[i] != "-1" && w[i] != "-1" {
			return false
		}
	}
	return true
}

// checkEnsemble checks ensemble name of the repository configs (see checkTritonRepo).
func checkEnsemble(t testing.TB, configs map[string]*tritonConfig, name string) {
	t.Helper()
	ens := configs[name]
	avail := map[string]tritonTensor{}
	for n, tt := range ens.inputs {
		avail[n] = tt
	}
	for _, io := range []map[string]tritonTensor{ens.inputs, ens.outputs} {
		for n, tt := range io {
			if tt.reshape != "" {
				t.Errorf("ensemble tensor %q is reshaped; ensembles pass tensors on as clients send them", n)
			}
		}
	}
	mapped := map[string]bool{}
	produced := map[string]bool{}
	steps := ens.steps()
	// Steps may run in any order Triton finds; resolve them as their inputs become ready.
	done := make([]bool, len(steps))
	for progress := true; progress; {
		progress = false
		for i, s := range steps {
			if done[i] {
				continue
			}
			ready := true
			for _, et := range s.in {
				if _, ok := avail[et]; !ok {
					ready = false
				}
			}
			if !ready {
				continue
			}
			done[i], progress = true, true
			mc := configs[s.model]
			if mc == nil {
				t.Fatalf("step %d runs model %q, which the repository lacks", i, s.model)
			}
			if mc.platform != "onnxruntime_onnx" {
				t.Errorf("step model %s has platform %q", s.model, mc.platform)
			}
			switch {
			case ens.maxBatch > 0 && mc.maxBatch < ens.maxBatch:
				t.Errorf("ensemble %s allows batches of %d, but step model %s only %d", ens.name, ens.maxBatch, s.model, mc.maxBatch)
			case ens.maxBatch == 0 && mc.maxBatch > 0:
				t.Errorf("step model %s batches (max_batch_size %d), the ensemble does not", s.model, mc.maxBatch)
			case mc.maxBatch > 0 && !mc.dynamic:
				t.Errorf("step model %s batches without dynamic_batching", s.model)
			}
			if len(s.in) != len(mc.inputs) {
				t.Errorf("step %s maps %d inputs, the model has %d", s.model, len(s.in), len(mc.inputs))
			}
			for mt, et := range s.in {
				mapped[et] = true
				want, ok := mc.inputs[mt]
				if !ok {
					t.Errorf("step %s maps %q, not an input of the model", s.model, mt)
					continue
				}
				if got := avail[et]; !dimsFit(got.api(), want.api()) {
					t.Errorf("step %s input %q: ensemble tensor %q is %v, the model wants %v", s.model, mt, et, got, want)
				}
			}
			for mt, et := range s.out {
				tt, ok := mc.outputs[mt]
				if !ok {
					t.Errorf("step %s maps %q, not an output of the model", s.model, mt)
					continue
				}
				if _, isIn := ens.inputs[et]; isIn || produced[et] {
					t.Errorf("ensemble tensor %q is produced twice", et)
				}
				produced[et] = true
				avail[et] = tt.api()
			}
		}
	}
	for i, d := range done {
		if !d {
			var missing []string
			for _, et := range steps[i].in {
				if _, ok := avail[et]; !ok {
					missing = append(missing, et)
				}
			}
			sort.Strings(missing)
			t.Errorf("step %s never runs: no producer for %q", steps[i].model, missing)
		}
	}
	for n := range ens.inputs {
		if !mapped[n] {
			t.Errorf("ensemble input %q is mapped by no step", n)
		}
	}
	for n, want := range ens.outputs {
		if got, ok := avail[n]; !ok || !produced[n] {
			t.Errorf("ensemble output %q is produced by no step", n)
		} else if !dimsFit(got, want.api()) {
			t.Errorf("ensemble output %q is %v, declared %v", n, got, want)
		}
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}
func (r *recorder) Fatalf(format string, a ...any) {
	r.Errorf(format, a...)
	runtime.Goexit()
}

// The repository checker itself must catch mis-wired ensembles.
func TestTritonRepoCheckerCatches(t *testing.T) {
	models, err := Models(tritonEncoder(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"output not produced", `output_map { key: "pooled" value: "pooled" }`, `output_map { key: "pooled" value: "pooled2" }`, `ensemble output "pooled" is produced by no step`},
		{"input never produced", `input_map { key: "attention_mask" value: "attention_mask" }`, `input_map { key: "attention_mask" value: "mask" }`, "never runs"},
		{"unmapped input", `      input_map { key: "attention_mask" value: "attention_mask" }` + "\n", "", "maps 1 inputs, the model has 2"},
		{"type mismatch", "    name: \"attention_mask\"\n    data_type: TYPE_BOOL", "    name: \"attention_mask\"\n    data_type: TYPE_INT8", "the model wants"},
		{"produced twice", `output_map { key: "logits" value: "logits" }`, `output_map { key: "logits" value: "pooled" }`, "produced twice"},
		{"unused input", `input_map { key: "attention_mask" value: "attention_mask" }`, `input_map { key: "attention_mask" value: "input_ids" }`, `ensemble input "attention_mask" is mapped by no step`},
		{"reshaped ensemble tensor", "    name: \"n_tokens\"\n    data_type: TYPE_INT64\n    dims: [ 1 ]\n", "    name: \"n_tokens\"\n    data_type: TYPE_INT64\n    dims: [ 1 ]\n    reshape: { shape: [ ] }\n", "is reshaped"},
	} {
		rec := &recorder{TB: t}
		configs := map[string]*tritonConfig{}
		for _, tm := range models {
			cfg := string(tm.Config)
			if tm.Stage < 0 {
				if !strings.Contains(cfg, c.old) {
					t.Fatalf("%s: the ensemble has no %q", c.name, c.old)
				}
				cfg = strings.Replace(cfg, c.old, c.new, 1)
			}
			configs[tm.Name] = parseTritonConfig(t, []byte(cfg))
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			checkTritonRepo(rec, configs)
		}()
		<-done
		if !strings.Contains(strings.Join(rec.errs, "\n"), c.want) {
			t.Errorf("%s: checker said %q, want %q", c.name, rec.errs, c.want)
		}
	}
}
