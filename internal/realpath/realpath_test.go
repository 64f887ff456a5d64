package realpath

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture is a resolved temp dir with a workspace, an outside directory and
// links of every kind between them.
func fixture(t *testing.T) (base, ws string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	ws = filepath.Join(base, "ws")
	must(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	must(t, os.MkdirAll(filepath.Join(base, "out"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET=1\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(base, "out", "x"), []byte("x\n"), 0o600))
	must(t, os.Symlink(".env", filepath.Join(ws, "env-link")))
	must(t, os.Symlink("../out", filepath.Join(ws, "out-link")))
	must(t, os.Symlink(filepath.Join(ws, "sub"), filepath.Join(ws, "sub-link")))
	must(t, os.Symlink("sub/new.txt", filepath.Join(ws, "dangling")))
	must(t, os.Symlink("loop-b", filepath.Join(ws, "loop-a")))
	must(t, os.Symlink("loop-a", filepath.Join(ws, "loop-b")))
	return base, ws
}

func TestResolve(t *testing.T) {
	t.Parallel()
	base, ws := fixture(t)
	f, err := os.Open(filepath.Join(ws, ".env"))
	must(t, err)
	defer f.Close()
	fd := strconv.Itoa(int(f.Fd()))
	pid := strconv.Itoa(os.Getpid())
	wd, err := os.Getwd()
	must(t, err)
	wd, err = filepath.EvalSymlinks(wd)
	must(t, err)
	env := filepath.Join(ws, ".env")

	tests := []struct {
		name, in, want, errHas string
	}{
		{name: "plain", in: env, want: env},
		{name: "dotdot", in: ws + "/sub/../.env", want: env},
		{name: "symlink to file", in: ws + "/env-link", want: env},
		{name: "symlink dir out", in: ws + "/out-link/x", want: base + "/out/x"},
		{name: "symlinked dir, new file", in: ws + "/sub-link/new/file", want: ws + "/sub/new/file"},
		{name: "dangling link is followed", in: ws + "/dangling", want: ws + "/sub/new.txt"},
		{name: "proc self root", in: "/proc/self/root" + env, want: env},
		{name: "proc self root twice", in: "/proc/self/root/proc/self/root" + env, want: env},
		{name: "proc thread-self root", in: "/proc/thread-self/root" + env, want: env},
		{name: "proc pid root", in: "/proc/" + pid + "/root" + env, want: env},
		{name: "proc self cwd", in: "/proc/self/cwd/realpath.go", want: wd + "/realpath.go"},
		{name: "proc pid cwd", in: "/proc/" + pid + "/cwd/realpath.go", want: wd + "/realpath.go"},
		{name: "proc self fd", in: "/proc/self/fd/" + fd, want: env},
		{name: "dev fd", in: "/dev/fd/" + fd, want: env},
		{name: "dotdot after an fd link", in: "/dev/fd/" + fd + "/../" + fd, want: env},
		{name: "loop", in: ws + "/loop-a", errHas: "too many levels"},
		{name: "relative", in: "a/b", errHas: "not absolute"},
		{name: "root", in: "/", want: "/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.in)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("Resolve(%q) = %q, %v; want error %q", tc.in, got, err, tc.errHas)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Resolve(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		root, p string
		want    bool
	}{
		{"/a", "/a", true}, {"/a", "/a/b", true}, {"/a", "/ab", false}, {"/a", "/", false},
		{"/", "/x", true}, {"/a/b", "/a", false},
	}
	for _, tc := range tests {
		if got := Within(tc.root, tc.p); got != tc.want {
			t.Errorf("Within(%q, %q) = %v", tc.root, tc.p, got)
		}
	}
}

// TestOpenRefusesSwappedSymlink: a path checked while it held no symlink
// must not be followed through one swapped in afterwards, at any depth.
func TestOpenRefusesSwappedSymlink(t *testing.T) {
	t.Parallel()
	base, ws := fixture(t)
	tests := []struct {
		name string
		path string // checked (resolved) path
		swap func() // what the attacker does after the check
	}{
		{"file becomes a link", ws + "/ok.txt", func() {
			must(t, os.Remove(ws+"/ok.txt"))
			must(t, os.Symlink(".env", ws+"/ok.txt"))
		}},
		{"directory becomes a link", ws + "/d/ok.txt", func() {
			must(t, os.RemoveAll(ws+"/d"))
			must(t, os.Symlink(base+"/out", ws+"/d"))
			must(t, os.WriteFile(base+"/out/ok.txt", []byte("outside\n"), 0o600))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			must(t, os.MkdirAll(filepath.Dir(tc.path), 0o755))
			must(t, os.WriteFile(tc.path, []byte("fine\n"), 0o600))
			p, err := Resolve(tc.path)
			must(t, err)
			if data, err := ReadFile(p); err != nil || string(data) != "fine\n" {
				t.Fatalf("before the swap: %q, %v", data, err)
			}
			tc.swap()
			data, err := ReadFile(p)
			if !errors.Is(err, ErrSymlink) {
				t.Fatalf("after the swap: read %q, err %v; want ErrSymlink", data, err)
			}
			if err := WriteAtomic(p, []byte("new\n"), 0o644); !errors.Is(err, ErrSymlink) && !strings.Contains(tc.name, "file") {
				t.Fatalf("WriteAtomic through a swapped directory: %v; want ErrSymlink", err)
			}
			if got, _ := os.ReadFile(base + "/out/ok.txt"); string(got) == "new\n" {
				t.Fatal("the write landed outside through the swapped link")
			}
			if got, _ := os.ReadFile(ws + "/.env"); string(got) != "SECRET=1\n" {
				t.Fatalf(".env changed through the swapped link: %q", got)
			}
		})
	}
}

func TestWriteAtomic(t *testing.T) {
	t.Parallel()
	_, ws := fixture(t)
	p := ws + "/sub/a.txt"
	must(t, WriteAtomic(p, []byte("one\n"), 0o640))
	must(t, WriteAtomic(p, []byte("two\n"), 0o640))
	data, err := os.ReadFile(p)
	if err != nil || string(data) != "two\n" {
		t.Fatalf("read back %q, %v", data, err)
	}
	fi, err := os.Stat(p)
	must(t, err)
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", fi.Mode().Perm())
	}
	entries, err := os.ReadDir(ws + "/sub")
	must(t, err)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
	// A symlink at the target itself is replaced, never written through.
	must(t, WriteAtomic(ws+"/env-link", []byte("replaced\n"), 0o644))
	if got, _ := os.ReadFile(ws + "/.env"); string(got) != "SECRET=1\n" {
		t.Fatalf("written through the link: .env is %q", got)
	}
	if fi, err := os.Lstat(ws + "/env-link"); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("env-link is not a regular file now: %v, %v", fi, err)
	}
	if err := WriteAtomic("relative", nil, 0o644); err == nil {
		t.Fatal("a relative path was accepted")
	}
}

// FuzzResolve: any absolute path resolves to a clean absolute path free of
// links (resolving it again changes nothing), or to an error.
func FuzzResolve(f *testing.F) {
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	ws := base + "/ws"
	for _, d := range []string{ws + "/sub", base + "/out"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{"ws/up": "..", "ws/out": "../out", "ws/abs": base + "/out", "ws/self": ".", "ws/loop": "loop", "ws/dangling": "sub/x/y"} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range []string{"up/ws/sub", "out/../up", "self/self/abs/x", "loop", "dangling/z", "sub/../../ws", "/proc/self/root", "/dev/fd/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if strings.IndexByte(p, 0) >= 0 {
			return
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(ws, p)
		}
		got, err := Resolve(p)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Fatalf("Resolve(%q) = %q: not clean and absolute", p, got)
		}
		if again, err := Resolve(got); err != nil || again != got {
			t.Fatalf("Resolve(%q) = %q, but that resolves to %q, %v", p, got, again, err)
		}
	})
}
