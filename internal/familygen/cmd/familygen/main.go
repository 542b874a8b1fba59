// Command familygen writes models of held-out families (internal/familygen) with
// deterministic pseudo-random weights:
//
//	go run ./internal/familygen/cmd/familygen -o /tmp/fam                      # every *_small preset
//	go run ./internal/familygen/cmd/familygen -o /tmp/fam densenet121_small gpt2_small
//	go run ./internal/familygen/cmd/familygen -list
//	go run ./internal/familygen/cmd/familygen -graph-seed 2 -o /tmp/fam randwire_ws_small   # another random graph
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/onnxpart/onnxpart/internal/familygen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "familygen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("familygen", flag.ContinueOnError)
	out := fs.String("o", ".", "output directory")
	seed := fs.Uint64("seed", 1, "weight seed")
	graphSeed := fs.Uint64("graph-seed", 0, "RandWire presets: draw the random graphs from this seed (0: the preset's)")
	list := fs.Bool("list", false, "list the presets")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *list {
		for _, n := range familygen.PresetNames() {
			fmt.Println(n)
		}
		return nil
	}
	names := fs.Args()
	if len(names) == 0 {
		for _, n := range familygen.PresetNames() {
			if strings.HasSuffix(n, "_small") {
				names = append(names, n)
			}
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		m, ok := familygen.Presets[n]
		if !ok {
			return fmt.Errorf("no preset %q (have %s)", n, strings.Join(familygen.PresetNames(), ", "))
		}
		if rw, isRW := m.(familygen.RandWire); isRW && *graphSeed != 0 {
			rw.GraphSeed = *graphSeed
			m = rw
		}
		p, err := familygen.Write(*out, n, m, *seed)
		if err != nil {
			return err
		}
		fmt.Println(p)
	}
	return nil
}
