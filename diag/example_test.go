package diag_test

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/onnxpart/onnxpart/diag"
)

func Example() {
	err := diag.Usage("--dim %s=%d: a dimension cannot be negative", "batch", -1).About(diag.Flag, "--dim")
	fmt.Println(err, diag.ExitCode(err))

	err = diag.Input("cannot read: %w", fs.ErrPermission).About(diag.File, "model.onnx")
	fmt.Println(err, diag.ExitCode(err), errors.Is(err, fs.ErrPermission))

	wrapped := fmt.Errorf("planning: %w", diag.Infeasible("node %s fits no device", "conv1").About(diag.Node, "conv1"))
	var de *diag.Error
	if errors.As(wrapped, &de) {
		fmt.Println(de.Kind, de.Subject.Kind, de.Subject.Name, diag.ExitCode(wrapped))
	}
	// Output:
	// --dim batch=-1: a dimension cannot be negative 2
	// model.onnx: cannot read: permission denied 1 true
	// infeasible node conv1 3
}
