// Package outdir holds what the packages that write into an onnxpart output directory
// share: the names of the entries other than the stage files and the manifest, and the
// synced, create-only file writing they all use.
//
// What goes in: paths and bytes. What comes out: files written and synced (never replacing
// an existing one), a safe stem for temporary names, and the text form of dim bindings that
// reports and verification messages print. Package emit writes the stage files and the
// manifest and, when it replaces a previous output (--force), recognises the entries named
// here as onnxpart's own; packages report, deploy/triton and deploy/genai write them.
package outdir

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Names of the entries of an output directory that packages other than emit write.
const (
	// ReportFile is report.html (package report).
	ReportFile = "report.html"
	// TritonDir is the Triton model repository's directory (package deploy/triton).
	TritonDir = "triton"
	// GenAIFile is onnxruntime-genai's configuration (package deploy/genai).
	GenAIFile = "genai_config.json"
)

// WriteFileSync creates path (it must not exist), writes data and syncs it.
func WriteFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TempBase makes a safe, short file-name stem from the output directory's name.
func TempBase(abs string) string {
	base := filepath.Base(abs)
	var b strings.Builder
	for _, r := range base {
		if r < 128 && (r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 48 {
			break
		}
	}
	return strings.TrimLeft(b.String(), ".")
}

// DimList writes dims as "batch=1, seq=4", sorted.
func DimList(d map[string]int64) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d,", k, d[k])
	}
	return strings.ReplaceAll(strings.TrimSuffix(b.String(), ","), ",", ", ")
}
