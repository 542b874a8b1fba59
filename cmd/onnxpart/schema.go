package main

import (
	"context"
	"fmt"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit/schema"
)

func init() {
	register(&command{
		name:    "schema",
		summary: "print the JSON Schema of an output (manifest.v1, plan.v1, inspect.v1, …)",
		usage: `Usage: onnxpart schema [NAME]

Without NAME, lists the JSON Schemas (draft 2020-12) of onnxpart's machine-readable outputs:
manifest.json and every --json output. With NAME, prints that schema, so pipelines can
validate what they read:

  onnxpart schema manifest.v1 > manifest.schema.json
`,
		run: func(ctx context.Context, e *env, args []string) error {
			c := commands["schema"]
			fs := newFlags(e, c)
			if err := parseFlags(fs, args); err != nil {
				return err
			}
			switch fs.NArg() {
			case 0:
				for _, n := range schema.Names() {
					fmt.Fprintln(e.stdout, n)
				}
				return nil
			case 1:
				b, err := schema.Get(fs.Arg(0))
				if err != nil {
					return diag.Usage("%v (see onnxpart schema)", err)
				}
				_, err = e.stdout.Write(b)
				return err
			}
			return diag.Usage("schema takes at most one name")
		},
	})
}
