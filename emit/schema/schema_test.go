package schema_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/emit/schema"
	"github.com/onnxpart/onnxpart/verify"
)

func TestNames(t *testing.T) {
	want := []string{"bench.v1", "costs.v1", "genai_config.v1", "inspect.v1", "manifest.v1", "plan.v1", "profile.v1", "verify.v1"}
	if got := schema.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	if _, err := schema.Get("manifest"); err == nil || !strings.Contains(err.Error(), "manifest.v1") {
		t.Errorf("Get of an unknown name: %v, want an error listing the names", err)
	}
	if err := schema.Validate("nope.v1", []byte(`{}`)); err == nil {
		t.Error("Validate with an unknown schema succeeded")
	}
	if err := schema.Validate("plan.v1", []byte(`{"objective": 1} {}`)); err == nil || !strings.Contains(err.Error(), "not one JSON value") {
		t.Errorf("two JSON values: %v", err)
	}
}

// TestSchemaFiles checks each file's header: draft 2020-12, an $id naming the schema, a
// title, and for the manifest the format string emit writes.
func TestSchemaFiles(t *testing.T) {
	for _, name := range schema.Names() {
		text, err := schema.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(text, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema %v", name, doc["$schema"])
		}
		if doc["$id"] != "urn:onnxpart:schema:"+name {
			t.Errorf("%s: $id %v", name, doc["$id"])
		}
		if s, _ := doc["title"].(string); s == "" {
			t.Errorf("%s: no title", name)
		}
		// Every "format" property (one per form) names the schema.
		kind, version, _ := strings.Cut(name, ".")
		formats := 0
		eachObject(doc, "", func(path string, obj map[string]any) {
			props, _ := obj["properties"].(map[string]any)
			f, ok := props["format"].(map[string]any)
			if !ok {
				return
			}
			formats++
			if f["const"] != "onnxpart."+kind+"/"+version {
				t.Errorf("%s %s: format const %v, want onnxpart.%s/%s", name, path, f["const"], kind, version)
			}
		})
		if formats == 0 {
			t.Errorf("%s: no format property", name)
		}
		// Both modes compile.
		if err := schema.Validate(name, []byte(`{}`)); err == nil || strings.HasPrefix(err.Error(), "schema ") {
			t.Errorf("%s: validating {}: %v", name, err)
		}
		if err := schema.ValidateStrict(name, []byte(`{}`)); err == nil || strings.HasPrefix(err.Error(), "schema ") {
			t.Errorf("%s: strictly validating {}: %v", name, err)
		}
	}
	var m map[string]any
	text, _ := schema.Get("manifest.v1")
	json.Unmarshal(text, &m)
	if got := m["properties"].(map[string]any)["format"].(map[string]any)["const"]; got != emit.Format {
		t.Errorf("manifest.v1 format %v, emit writes %s", got, emit.Format)
	}
}

// mutation is a change to a valid document and what Validate must say about it.
type mutation struct {
	what   string
	change func(any)
	// strictOnly: the published schema accepts the change (an optional or added field);
	// ValidateStrict must not.
	strictOnly bool
	// where is the JSON pointer the error must name.
	where string
}

func checkMutations(t *testing.T, name string, doc []byte, muts []mutation) {
	t.Helper()
	if err := schema.ValidateStrict(name, doc); err != nil {
		t.Fatalf("the unmodified document fails: %v", err)
	}
	for _, mu := range muts {
		bad := edit(t, doc, mu.change)
		err := schema.ValidateStrict(name, bad)
		loose := schema.Validate(name, bad)
		switch {
		case err == nil:
			t.Errorf("%s: %s: ValidateStrict accepted it", name, mu.what)
		case !mu.strictOnly && loose == nil:
			t.Errorf("%s: %s: Validate accepted it", name, mu.what)
		case mu.strictOnly && loose != nil:
			t.Errorf("%s: %s: Validate refused an addition that v1 allows: %v", name, mu.what, loose)
		case !strings.Contains(err.Error(), "'"+mu.where+"'"):
			t.Errorf("%s: %s: the error does not name %s:\n%v", name, mu.what, mu.where, err)
		}
	}
}

func TestManifestMutations(t *testing.T) {
	doc := readManifest(t, splitModel(t, load(t, repoModel, nil), 2, emit.Options{}))
	checkMutations(t, "manifest.v1", doc, []mutation{
		{what: "missing stage sha256", change: deleteField(t, "stages/0/sha256"), where: "/stages/0"},
		{what: "params_bytes renamed param_bytes", change: renameField(t, "model/params_bytes", "param_bytes"), where: "/model"},
		{what: "node count as a string", change: setField(t, "model/nodes", "122"), where: "/model/nodes"},
		{what: "another format", change: setField(t, "format", "onnxpart.manifest/v2"), where: "/format"},
		{what: "tensor shape as a string", change: setField(t, "stages/0/outputs/0/shape", "1x32x56x56"), where: "/stages/0/outputs/0/shape"},
		{what: "bytes below -1", change: setField(t, "transfers/0/bytes", -2), where: "/transfers/0/bytes"},
		{what: "consumer_stages renamed consumers", change: renameField(t, "stages/0/outputs/0/consumer_stages", "consumers"), strictOnly: true, where: "/stages/0/outputs/0"},
		{what: "an undeclared field", change: setField(t, "stages/1/extra", 1), strictOnly: true, where: "/stages/1"},
	})
}

func TestInspectMutations(t *testing.T) {
	doc := marshal(t, load(t, repoModel, nil).Summarize(true))
	checkMutations(t, "inspect.v1", doc, []mutation{
		{what: "missing flops", change: deleteField(t, "flops"), where: ""},
		{what: "dtype renamed type", change: renameField(t, "inputs/0/dtype", "type"), where: "/inputs/0"},
		{what: "shape as a string", change: setField(t, "outputs/0/shape", "1x125"), where: "/outputs/0/shape"},
		{what: "unknown tensor kind", change: setField(t, "tensors/0/kind", "weight"), where: "/tensors/0/kind"},
		{what: "producer renamed producer_node", change: renameField(t, "tensors/200/producer", "producer_node"), strictOnly: true, where: "/tensors/200"},
	})
}

func TestVerifyMutations(t *testing.T) {
	needORT(t)
	rep, err := verify.Run(t.Context(), splitModel(t, load(t, repoModel, nil), 2, emit.Options{}), verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkMutations(t, "verify.v1", marshal(t, rep), []mutation{
		{what: "missing pass", change: deleteField(t, "pass"), where: ""},
		{what: "max_abs as a string", change: setField(t, "outputs/0/max_abs", "0"), where: "/outputs/0/max_abs"},
		{what: "bit_exact renamed exact", change: renameField(t, "outputs/0/bit_exact", "exact"), where: "/outputs/0"},
		{what: "problem renamed error", change: setField(t, "outputs/0/error", "x"), strictOnly: true, where: "/outputs/0"},
	})
}

// schemaTypes maps every property name declared anywhere in the schemas to the JSON types
// it may take, per schema, resolving local $refs and unions.
func schemaTypes(t *testing.T) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, name := range schema.Names() {
		text, _ := schema.Get(name)
		var root map[string]any
		if err := json.Unmarshal(text, &root); err != nil {
			t.Fatal(err)
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if props, ok := v["properties"].(map[string]any); ok {
					for p, s := range props {
						if out[p] == nil {
							out[p] = map[string]string{}
						}
						ts := typesOf(root, s)
						if prev, ok := out[p][name]; ok && prev != ts {
							ts = prev + " | " + ts
						}
						out[p][name] = ts
					}
				}
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(root)
	}
	return out
}

// typesOf lists the JSON types a schema admits, sorted and joined ("integer,null"); arrays
// are written array<items>.
func typesOf(root map[string]any, s any) string {
	m, ok := s.(map[string]any)
	if !ok {
		return "any"
	}
	if ref, ok := m["$ref"].(string); ok {
		if ref == "#" { // the document itself (verify's route reports)
			return typesOf(root, map[string]any{"type": root["type"]})
		}
		def := strings.TrimPrefix(ref, "#/$defs/")
		return typesOf(root, root["$defs"].(map[string]any)[def])
	}
	set := map[string]bool{}
	add := func(ts ...string) {
		for _, x := range ts {
			for _, y := range strings.Split(x, ",") {
				set[y] = true
			}
		}
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		if alts, ok := m[key].([]any); ok {
			for _, a := range alts {
				add(typesOf(root, a))
			}
		}
	}
	jsonType := func(v any) string {
		switch v.(type) {
		case string:
			return "string"
		case bool:
			return "boolean"
		case float64:
			return "number"
		case nil:
			return "null"
		}
		return "other"
	}
	if c, ok := m["const"]; ok {
		add(jsonType(c))
	}
	if e, ok := m["enum"].([]any); ok {
		for _, x := range e {
			add(jsonType(x))
		}
	}
	var types []string
	switch ty := m["type"].(type) {
	case string:
		types = []string{ty}
	case []any:
		for _, x := range ty {
			types = append(types, x.(string))
		}
	}
	for _, ty := range types {
		switch ty {
		case "array":
			add("array<" + strings.ReplaceAll(typesOf(root, m["items"]), ",", "/") + ">")
		case "object":
			add("object")
		default:
			add(ty)
		}
	}
	if len(set) == 0 {
		return "any"
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// knownConflicts are field names that mean different things in different outputs today.
// They are reported in issue 10; renaming them is a v2 change (or is for the package that
// owns the output). A new conflict fails the test: reuse a field name only with the same
// meaning and type, or choose another name.
var knownConflicts = map[string]string{
	"bounds":    "the certificate object (manifest) but the list of computed bounds (plan)",
	"devices":   "device objects (manifest), device names (plan), the --devices argument (profile, whose list is device_list)",
	"inputs":    "tensor objects, but tensor names in the onnxruntime-genai pipeline entries and genai_config's decoder name map (genai's format)",
	"outputs":   "tensor objects, but tensor names in the onnxruntime-genai pipeline entries and genai_config's decoder name map (genai's format)",
	"pipeline":  "one stage's element (manifest stages[]) but the whole array of them (genai_config, genai's format)",
	"label":     "the assignment's stage label (manifest stages[]) but the event's text (manifest timeline[])",
	"model":     "the model object (manifest, profile) but a path (verify) or a product name (profile device_list[])",
	"nodes":     "a count (model, inspect, profile, fusion) but the node names (manifest stages[])",
	"notes":     "always an array, but null when empty in profile",
	"objective": "the objective's name (manifest; plan calls it objective_kind) but the plan's value (plan, as issue 6 specifies)",
	"ops":       "the op histogram (inspect) but a group's op list (inspect fusion.largest[])",
	"fusion":    "the coarsening summary (inspect --fusion) but the rule set's name (plan)",
	"seconds":   "a duration, but per-device durations in profile model.classes[], model.kernel_times[] and model.node_times[]",
	"shape":     "symbolic dimensions allowed (manifest, inspect) but only concrete sizes in verify, which runs them",
	"stages":    "stage objects (manifest), stage indices (manifest duplicated_weights[]), node ids (plan), a count (verify)",
}

// TestFieldNamesAgree checks that a field name has the same type wherever it appears, and
// that every tensor object is {name, dtype, shape, bytes, ...}.
func TestFieldNamesAgree(t *testing.T) {
	var msgs []string
	for field, per := range schemaTypes(t) {
		seen := map[string][]string{}
		for name, ty := range per {
			for _, one := range strings.Split(ty, " | ") {
				seen[one] = append(seen[one], name)
			}
		}
		if len(seen) > 1 {
			if _, ok := knownConflicts[field]; !ok {
				var parts []string
				for ty, names := range seen {
					sort.Strings(names)
					parts = append(parts, fmt.Sprintf("%s in %s", ty, strings.Join(names, ", ")))
				}
				sort.Strings(parts)
				msgs = append(msgs, fmt.Sprintf("%q: %s", field, strings.Join(parts, "; ")))
			}
		}
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		t.Errorf("field %s", m)
	}
	for field := range knownConflicts {
		if _, ok := schemaTypes(t)[field]; !ok {
			t.Errorf("knownConflicts lists %q, which no schema has any more", field)
		}
	}
	// Tensors: {name, dtype, shape, bytes} are always there.
	for _, name := range schema.Names() {
		text, _ := schema.Get(name)
		var root any
		json.Unmarshal(text, &root)
		eachObject(root, "", func(path string, obj map[string]any) {
			props, _ := obj["properties"].(map[string]any)
			if props["dtype"] == nil {
				return
			}
			req := map[string]bool{}
			for _, r := range obj["required"].([]any) {
				req[r.(string)] = true
			}
			for _, f := range []string{"name", "dtype", "shape", "bytes"} {
				if !req[f] && !(f == "bytes" && name == "verify.v1") {
					t.Errorf("%s %s: a tensor without required %q", name, path, f)
				}
			}
		})
	}
	// Durations are in seconds and named *_s, except where profile already says *_seconds.
	knownSeconds := map[string]bool{"total_seconds": true, "run_overhead_seconds": true, "measured_call_seconds": true,
		"compute_seconds": true, "binding_seconds": true}
	for field, per := range schemaTypes(t) {
		if strings.HasSuffix(field, "_seconds") && !knownSeconds[field] {
			t.Errorf("field %q (%v): durations are named *_s", field, per)
		}
	}
}

// eachObject calls f on every object of a decoded schema with its JSON pointer.
func eachObject(v any, path string, f func(string, map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		f(path, v)
		for k, x := range v {
			eachObject(x, path+"/"+k, f)
		}
	case []any:
		for i, x := range v {
			eachObject(x, fmt.Sprintf("%s/%d", path, i), f)
		}
	}
}
