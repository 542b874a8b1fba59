package atomicfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "two" || st.Mode().Perm() != 0o644 {
		t.Errorf("got %q mode %v, want \"two\" 0644", b, st.Mode().Perm())
	}
	// A directory in the way: the write fails and leaves no temporary file behind.
	if err := WriteFile(filepath.Join(dir, "sub"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "sub"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "x"), nil, 0o644)
	if err := WriteFile(filepath.Join(dir, "sub"), []byte("z"), 0o644); err == nil {
		t.Error("writing over a non-empty directory succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("%d entries left, want a.txt and sub", len(ents))
	}
}

func TestReplaceDir(t *testing.T) {
	dir := t.TempDir()
	dst, tmp := filepath.Join(dir, "out"), filepath.Join(dir, ".out.tmp")
	os.Mkdir(dst, 0o755)
	os.WriteFile(filepath.Join(dst, "f"), []byte("old"), 0o644)
	os.Mkdir(tmp, 0o755)
	os.WriteFile(filepath.Join(tmp, "f"), []byte("new"), 0o644)
	refuse := errors.New("not ours")
	if _, err := ReplaceDir(tmp, dst, func(string) error { return refuse }); !errors.Is(err, refuse) {
		t.Fatalf("check's refusal: got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "old" {
		t.Fatalf("after a refusal dst holds %q, want the old content", b)
	}
	old, err := ReplaceDir(tmp, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "new" {
		t.Errorf("dst holds %q, want new", b)
	}
	if b, _ := os.ReadFile(filepath.Join(old, "f")); string(b) != "old" {
		t.Errorf("old holds %q, want old", b)
	}
	// No directory to replace: an error, and tmp stays where it was.
	if _, err := ReplaceDir(filepath.Join(dir, "nope.tmp"), filepath.Join(dir, "missing"), nil); err == nil {
		t.Error("replacing a missing directory succeeded")
	}
}
