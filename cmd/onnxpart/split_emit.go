package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/onnxpart/onnxpart/deploy/genai"
	"github.com/onnxpart/onnxpart/deploy/triton"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/report"
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
	// genai, when set, writes genai_config.json (see beforeManifest).
	genai *genai.Options
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
			se.genai = &genai.Options{Names: genaiFlags}
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
	opt, err := genai.Parse(settings, genaiFlags)
	if err != nil {
		return err // a usage *diag.Error
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
			if err := report.Write(rm, dir, report.Options{Producer: "onnxpart " + version}); err != nil {
				return err
			}
		}
		if se.triton {
			if err := triton.Write(man, dir, filepath.Join(dir, triton.Dir), triton.Options{MaxBatch: se.maxBatch, Names: emitFlags}); err != nil {
				return err
			}
		}
		return nil
	}
}

// beforeManifest returns the emit.Options.BeforeManifest hook that writes m's
// genai_config.json beside the stage files, before the manifest that carries its notes
// (nil without --emit genai).
func (se emitSet) beforeManifest(m *ingest.Model) func(string, *emit.Manifest) error {
	if se.genai == nil {
		return nil
	}
	opt := se.genai
	return func(dir string, man *emit.Manifest) error { return genai.Write(dir, m, man, opt) }
}

// print names the extra outputs after the summary.
func (se emitSet) print(w io.Writer, dir string) {
	if se.report {
		fmt.Fprintf(w, "report: %s\n", filepath.Join(dir, report.File))
	}
	if se.triton {
		repo := filepath.Join(dir, triton.Dir)
		fmt.Fprintf(w, "triton: %s (tritonserver --model-repository %s)\n", repo, repo)
	}
	if se.genai != nil {
		fmt.Fprintf(w, "genai: %s (onnxruntime-genai: og.Model(%q))\n", filepath.Join(dir, genai.File), dir)
	}
}
