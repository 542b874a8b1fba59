package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
)

// emitHelp is the help of --emit, the same values for the main command and split.
const emitHelp = "what to write: onnx and manifest (always written), report (DIR/report.html), triton (a Triton model repository in DIR/triton), genai (DIR/genai_config.json, onnxruntime-genai's pipeline decoder)"

// genaiHelp is the help of --genai, the same for the main command and split.
const genaiHelp = "a value of DIR/genai_config.json the model does not hold, KEY=VALUE (repeatable; implies --emit genai): context_length, bos_token_id, eos_token_id (a,b,…), pad_token_id, vocab_size, hidden_size, num_attention_heads, or hf_config=FILE, the Hugging Face config.json to read them from (default: config.json beside the model)"

// emitSet is what --emit asked for beyond the stage files and the manifest, which are
// always written.
type emitSet struct {
	report, triton bool
	// solverSeconds, when set, is the planning time the report shows (the manifest leaves
	// timings out).
	solverSeconds float64
	// maxBatch is Triton's max_batch_size (--max-batch; 0: the bound batch size).
	maxBatch int
	// genai, when set, writes genai_config.json (emit.Options.GenAI).
	genai *emit.GenAIOptions
}

// parseEmit reads an --emit list (comma-separated or repeated): onnx and manifest (always
// written), report (DIR/report.html), triton (a Triton model repository in DIR/triton) and
// genai (DIR/genai_config.json).
func parseEmit(list []string) (emitSet, error) {
	var se emitSet
	for _, x := range list {
		switch x = strings.TrimSpace(x); x {
		case "onnx", "manifest", "":
		case "report":
			se.report = true
		case "triton":
			se.triton = true
		case "genai":
			se.genai = &emit.GenAIOptions{}
		default:
			hint := ""
			if s := suggest(x, []string{"onnx", "manifest", "report", "triton", "genai"}); s != "" {
				hint = fmt.Sprintf(" (did you mean %s?)", s)
			}
			return se, diag.Usage("--emit %q: want a list of onnx, manifest, report, triton, genai%s", x, hint).About(diag.Flag, "--emit")
		}
	}
	return se, nil
}

// setGenAI reads the --genai settings, which imply --emit genai.
func (se *emitSet) setGenAI(settings []string) error {
	if len(settings) == 0 {
		return nil
	}
	opt, err := emit.ParseGenAI(settings)
	if err != nil {
		return diag.Wrap(diag.KindUsage, err)
	}
	se.genai = opt
	return nil
}

// extras returns the emit.Options.Extras hook that writes the report and the Triton
// repository into the output directory before its atomic rename (nil for neither), so
// that a failure leaves nothing behind.
func (se emitSet) extras() func(string, *emit.Manifest) error {
	if !se.report && !se.triton {
		return nil
	}
	return func(dir string, man *emit.Manifest) error {
		if se.report {
			rm := man
			if se.solverSeconds > 0 && man.Solver != nil {
				c, s := *man, *man.Solver
				s.Seconds = se.solverSeconds
				c.Solver = &s
				rm = &c
			}
			if err := emit.WriteReport(rm, dir, emit.ReportOptions{Producer: "onnxpart " + version}); err != nil {
				return err
			}
		}
		if se.triton {
			if err := emit.WriteTriton(man, dir, filepath.Join(dir, emit.TritonDir), emit.TritonOptions{MaxBatch: se.maxBatch}); err != nil {
				return err
			}
		}
		return nil
	}
}

// print names the extra outputs after the summary.
func (se emitSet) print(w io.Writer, dir string) {
	if se.report {
		fmt.Fprintf(w, "report: %s\n", filepath.Join(dir, emit.ReportFile))
	}
	if se.triton {
		repo := filepath.Join(dir, emit.TritonDir)
		fmt.Fprintf(w, "triton: %s (tritonserver --model-repository %s)\n", repo, repo)
	}
	if se.genai != nil {
		fmt.Fprintf(w, "genai: %s (onnxruntime-genai: og.Model(%q))\n", filepath.Join(dir, emit.GenAIFile), dir)
	}
}
