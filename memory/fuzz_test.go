package memory

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzEntryPaths: whatever name or path a model sends, an accepted entry
// name is a plain file directly in the directory, and Resolve never
// accepts a path outside it.
func FuzzEntryPaths(f *testing.F) {
	for _, s := range []string{"notes", "../x", "/etc/passwd", "a/../../b", "..", "MEMORY", "memory.md", "x.md", "a\x00b", "./a", "a/./b.md", `..\x`, "~", ""} {
		f.Add(s)
	}
	root := filepath.Join(f.TempDir(), "memory")
	d, err := OpenDir(root, DirOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := CheckName(s); err == nil {
			p := d.entryPath(n)
			if filepath.Dir(p) != d.Path() || strings.ContainsAny(n, `/\.`+"\x00") {
				t.Fatalf("CheckName(%q) = %q leads to %s", s, n, p)
			}
		}
		if p, err := d.Resolve(s); err == nil {
			rel, rerr := filepath.Rel(d.Path(), p)
			if rerr != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
				t.Fatalf("Resolve(%q) = %s, outside %s", s, p, d.Path())
			}
		}
	})
}
