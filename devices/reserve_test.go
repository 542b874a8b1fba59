package devices

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/onnxpart/onnxpart/profile"
)

// TestWorkspaceReserve: a spec file's workspace_reserve sets a device's reserve (0 included);
// without it a GPU reserves DefaultGPUReserve and a CPU nothing; a negative one is refused.
func TestWorkspaceReserve(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "c.yaml")
	y := "devices:\n  - {name: a, type: t4, workspace_reserve: 512MiB}\n  - {name: b, type: t4, workspace_reserve: 0}\n  - {name: c, type: t4}\n  - {name: d, type: cpu-generic}\n"
	if err := os.WriteFile(spec, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(context.Background(), spec, noBench())
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{512 << 20, 0, profile.DefaultGPUReserve, 0} {
		if got := c.Devices[i].Reserve(); got != want {
			t.Errorf("%s: reserve %g, want %g", c.Devices[i].Name, got, want)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("devices:\n  - {name: a, type: t4, workspace_reserve: -1MiB}\n"), 0o644)
	if _, err := Resolve(context.Background(), bad, noBench()); err == nil {
		t.Error("a negative workspace_reserve was accepted")
	}
}
