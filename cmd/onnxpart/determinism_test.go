package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDeterminism runs the main command as a subprocess three times, with GOMAXPROCS=1, 2
// and 8 and the same --seed, for (a) a throughput pipeline on identical devices and (b) a
// latency placement on mixed devices with a time limit and (c) a batch of 16 shared among
// them (every route directory included), and checks that the runs write the
// same files, byte for byte (stage files, manifest.json, report.html). Without --seed's
// reproducible mode (b) differed: MILP-SPLIT shares the time limit by the clock.
// ONNXPART_DETERMINISM_FULL=1 runs more corpus models (about 3 minutes on 2 cores).
func TestDeterminism(t *testing.T) {
	models, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "models"))
	names := []string{"googlenet_small"}
	if os.Getenv("ONNXPART_DETERMINISM_FULL") != "" {
		names = append(names, "resnet50_small", "squeezenet1_1_small", "randwire_ws_small_small", "bert_base_like_small")
	}
	if _, err := os.Stat(filepath.Join(models, names[0]+".onnx")); err != nil {
		t.Skip("the shared model corpus is not present")
	}
	// testscript.Main runs the command when the test binary is invoked as "onnxpart".
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "onnxpart")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
	}{
		{"pipeline", []string{"--devices", "4xA100-80G"}},
		{"placement", []string{"--devices", "a100-80g,t4,cpu", "--time-limit", placementLimit}},
		{"batch", []string{"--devices", "a100-80g,t4,cpu", "--batch", "16", "--time-limit", placementLimit}},
	}
	for _, m := range names {
		for _, c := range cases {
			if m == "bert_base_like_small" && c.name == "batch" {
				continue // its attention folds the batch of one into a constant shape: --batch refuses it (run.txtar)
			}
			t.Run(m+"/"+c.name, func(t *testing.T) {
				dirs := map[int]string{}
				for _, procs := range []int{1, 2, 8} {
					dir := filepath.Join(t.TempDir(), "out")
					args := append([]string{filepath.Join(models, m+".onnx")}, c.args...)
					args = append(args, "--seed", "7", "-q", "-o", dir)
					cmd := exec.Command(bin, args...)
					cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("GOMAXPROCS=%d onnxpart %s: %v\n%s", procs, strings.Join(args, " "), err, out)
					}
					dirs[procs] = dir
				}
				files := listFiles(t, dirs[1])
				if !slices.Contains(files, "manifest.json") || !slices.Contains(files, "stage0.onnx") {
					t.Fatalf("wrote %v", files)
				}
				for _, procs := range []int{2, 8} {
					if got := listFiles(t, dirs[procs]); !slices.Equal(got, files) {
						t.Fatalf("GOMAXPROCS=%d wrote %v, GOMAXPROCS=1 %v", procs, got, files)
					}
					for _, f := range files {
						a, _ := os.ReadFile(filepath.Join(dirs[1], f))
						b, _ := os.ReadFile(filepath.Join(dirs[procs], f))
						if !bytes.Equal(a, b) {
							t.Errorf("%s differs between GOMAXPROCS=1 and %d", f, procs)
							if f == "manifest.json" {
								t.Logf("notes of GOMAXPROCS=1: %s\nnotes of GOMAXPROCS=%d: %s", notes(a), procs, notes(b))
							}
						}
					}
				}
			})
		}
	}
}

// notes returns the notes of a manifest (a time limit that cut a search says so there).
func notes(manifest []byte) string {
	var m struct{ Notes []string }
	json.Unmarshal(manifest, &m)
	return strings.Join(m.Notes, "; ")
}

// placementLimit is the placement's --time-limit: the reproducible search takes well under a
// second on an idle machine, but ten times as long under the race detector and several seconds
// on a machine loaded ten times over (5 s cut the batch case's search short there), and a cut
// search would differ. The limit is a ceiling: a search that ends sooner returns at once.
var placementLimit = map[bool]string{false: "20s", true: "60s"}[raceEnabled]

// listFiles returns the regular files under dir, as sorted slash paths relative to it.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
