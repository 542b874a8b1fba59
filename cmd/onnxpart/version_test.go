package main

import (
	"runtime/debug"
	"testing"
)

// TestBuildVersion: --version names the build from what the go command stamped into it.
func TestBuildVersion(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"a release", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: vcs("3fd0a96c1e2b7d5f", "false")}, true, "v1.4.0"},
		{"a pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126155601-3fd0a96c1e2b+dirty"}}, true, "v0.0.0-20261126155601-3fd0a96c1e2b+dirty"},
		{"a revision", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("3fd0a96c1e2b7d5f9a0b", "false")}, true, "devel-3fd0a96c1e2b"},
		{"a modified tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("3fd0a96c1e2b7d5f9a0b", "true")}, true, "devel-3fd0a96c1e2b+dirty"},
		{"no VCS", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "dev"},
		{"no build info", nil, false, "dev"},
	} {
		if got := buildVersion(c.info, c.ok); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
