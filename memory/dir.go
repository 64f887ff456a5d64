package memory

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/policy/secret"
)

// File memory (seed 004 §6): entries are Markdown files in a directory,
// one fact or topic per file, listed in the directory's MEMORY.md index
// and injected into the system prompt of later sessions.

// Limits of file memory.
const (
	// MaxEntryBytes caps one entry file.
	MaxEntryBytes = 25 << 10
	// MaxTotalBytes caps all entries of a directory together.
	MaxTotalBytes = 100 << 10
	// IndexFile is the index every memory directory keeps.
	IndexFile = "MEMORY.md"
	// maxNameLen bounds an entry's name.
	maxNameLen = 64
	// maxDescription bounds an entry's description, its line in the index.
	maxDescription = 300
	// staleTemp is the age past which OpenDir removes a temporary file: a
	// write that old was interrupted (kill -9, a crash).
	staleTemp = 10 * time.Minute
)

// Errors of file memory; messages say more.
var (
	// ErrName: an entry name that is not a plain file name (traversal,
	// separators, absolute paths, the index's own name).
	ErrName = errors.New("invalid memory name")
	// ErrOutside: a path that is not inside the memory directory, or
	// reaches outside it through a symlink.
	ErrOutside = errors.New("path is outside the memory directory")
	// ErrTooLarge: an entry over MaxEntryBytes, or a write that would take
	// the directory over MaxTotalBytes.
	ErrTooLarge = errors.New("memory too large")
	// ErrSecret: the entry holds what looks like a secret; memory is sent
	// to the model with every later session, so it is refused.
	ErrSecret = errors.New("memory holds a secret")
	// ErrNoEntry: no entry of that name.
	ErrNoEntry = errors.New("no such memory")
)

// Type is what an entry is about; freshness thresholds can differ by type.
type Type string

// The entry types the tools offer (others read from disk are kept as
// they are).
const (
	TypeUser      Type = "user"      // who the user is, their preferences
	TypeFeedback  Type = "feedback"  // how the user wants the agent to work
	TypeProject   Type = "project"   // facts and decisions about the project
	TypeReference Type = "reference" // where to find things
)

// Entry is one memory file.
type Entry struct {
	// Name is the file name without ".md".
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Type        Type      `json:"type,omitempty"`
	Body        string    `json:"body"`
	Modified    time.Time `json:"modified"`
	// Size is the file's size in bytes, front matter included.
	Size int64 `json:"size"`
}

// DirOptions configure a Dir. The zero value means the defaults.
type DirOptions struct {
	// Guard scans entries for secrets before they are written; nil means
	// secret.NewDefaultGuard().
	Guard secret.Guard
	// Secrets are values known to be secret (API keys weft was given); an
	// entry holding one is refused too. Nil means none.
	Secrets *secret.Set
	// Freshness decides which entries the index and the prompt mark as
	// stale; nil means DefaultFreshnessConfig().
	Freshness *FreshnessConfig
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxEntryBytes and MaxTotalBytes replace the caps when positive.
	MaxEntryBytes, MaxTotalBytes int64
}

// Dir is one memory directory. Every file it writes goes through the
// same checks (name, caps, secret guard) and is written atomically (a
// temporary file renamed into place), so a crash leaves the old entry or
// the new one, never half of one. It is safe for concurrent use within a
// process; two processes writing the same entry race, the last rename
// winning.
//
// Dir is also the API a restricted writer (a sub-agent allowed to write
// only memory) is meant to be built on: Resolve says whether a path a
// tool was given is inside the directory, and WriteFile writes a path
// relative to it with all of the checks.
type Dir struct {
	root string
	opt  DirOptions
	mu   sync.Mutex
	// gen counts writes through this Dir, so caches of what it holds
	// (the prompt's memory section) know when to read again.
	gen atomic.Uint64
}

// OpenDir returns the memory directory at root, creating it (0700) when
// missing. root itself may be a symlink (a user's choice); entries in it
// may not.
func OpenDir(root string, opt DirOptions) (*Dir, error) {
	if root == "" {
		return nil, errors.New("memory directory: empty path")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("memory directory: %w", err)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("memory directory: %w", err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return nil, fmt.Errorf("memory directory: %w", err)
	}
	if opt.Guard == nil {
		opt.Guard = secret.NewDefaultGuard()
	}
	if opt.Freshness == nil {
		fc := DefaultFreshnessConfig()
		opt.Freshness = &fc
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxEntryBytes <= 0 {
		opt.MaxEntryBytes = MaxEntryBytes
	}
	if opt.MaxTotalBytes <= 0 {
		opt.MaxTotalBytes = MaxTotalBytes
	}
	d := &Dir{root: real, opt: opt}
	d.removeStaleTemps()
	return d, nil
}

// removeStaleTemps deletes temporary files interrupted writes left
// behind. Recent ones may belong to another process's write in progress.
func (d *Dir) removeStaleTemps() {
	des, err := os.ReadDir(d.root)
	if err != nil {
		return
	}
	now := time.Now()
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), ".tmp-") || !de.Type().IsRegular() {
			continue
		}
		if fi, err := de.Info(); err == nil && now.Sub(fi.ModTime()) > staleTemp {
			_ = os.Remove(filepath.Join(d.root, de.Name()))
		}
	}
}

// Path is the directory's absolute path, symlinks resolved (seed 000's
// Store.Dir: what a restricted writer confines writes to).
func (d *Dir) Path() string { return d.root }

// Generation changes whenever something is written through d.
func (d *Dir) Generation() uint64 { return d.gen.Load() }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// CheckName validates an entry name: letters, digits, '-' and '_', at
// most 64, starting with a letter or digit, and not the index's name. A
// trailing ".md" is allowed and dropped. Anything else (dots, slashes,
// "..", absolute paths, NUL, other scripts) is refused rather than
// cleaned up, so that a hostile name never lands somewhere unexpected.
func CheckName(name string) (string, error) {
	n := strings.TrimSuffix(name, ".md")
	switch {
	case n == "":
		return "", fmt.Errorf("%w: empty", ErrName)
	case len(n) > maxNameLen:
		return "", fmt.Errorf("%w: %.20q… is longer than %d characters", ErrName, n, maxNameLen)
	case !nameRE.MatchString(n):
		return "", fmt.Errorf("%w: %q: use letters, digits, '-' and '_' only (e.g. build-commands)", ErrName, name)
	case strings.EqualFold(n, strings.TrimSuffix(IndexFile, ".md")):
		return "", fmt.Errorf("%w: %q is the index's name", ErrName, name)
	}
	return n, nil
}

// Resolve returns the absolute path p names inside the directory (p
// absolute, or relative to it) or an error wrapping ErrOutside: p is
// cleaned, must lie within the directory, and no existing component of it
// below the directory may be a symlink (a link could lead out). This is
// the check a restricted writer applies to every path a model gives it.
func (d *Dir) Resolve(p string) (string, error) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%w: %q", ErrOutside, p)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(d.root, p)
	}
	p = filepath.Clean(p)
	rel, err := filepath.Rel(d.root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: %s", ErrOutside, p)
	}
	cur := d.root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("memory: %w", err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return "", fmt.Errorf("%w: %s is a symlink", ErrOutside, cur)
		}
	}
	return p, nil
}

// Contains reports whether p is inside the directory (see Resolve).
func (d *Dir) Contains(p string) bool {
	_, err := d.Resolve(p)
	return err == nil
}

// entryPath is the path of entry name (already checked).
func (d *Dir) entryPath(name string) string { return filepath.Join(d.root, name+".md") }

// Render is an entry as its file holds it: YAML-like front matter (name,
// description, type) and the body.
func Render(e Entry) string {
	var b strings.Builder
	b.WriteString("---\n")
	fmt.Fprintf(&b, "name: %s\n", e.Name)
	if e.Description != "" {
		fmt.Fprintf(&b, "description: %s\n", oneLine(e.Description))
	}
	if e.Type != "" {
		fmt.Fprintf(&b, "type: %s\n", oneLine(string(e.Type)))
	}
	b.WriteString("---\n\n")
	b.WriteString(strings.TrimSpace(e.Body))
	b.WriteByte('\n')
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// parse reads front matter (if any) and body of a memory file.
func parse(name, content string) Entry {
	e := Entry{Name: name, Body: content}
	rest, ok := strings.CutPrefix(content, "---\n")
	if !ok {
		return e
	}
	head, body, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		return e
	}
	for _, line := range strings.Split(head, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "description":
			e.Description = v
		case "type":
			e.Type = Type(v)
		}
	}
	e.Body = strings.TrimSpace(body)
	return e
}

// scan refuses content holding a secret: a known value, or what the
// guard's rules find. The message names neither the secret nor the rule.
func (d *Dir) scan(rel, content string) error {
	if d.opt.Secrets != nil && d.opt.Secrets.Redact(content) != content {
		return fmt.Errorf("%w: it contains the value of a secret weft was given; leave secrets out of memory", ErrSecret)
	}
	found, err := d.opt.Guard.Scan("memory/"+filepath.ToSlash(rel), content)
	if err != nil {
		return fmt.Errorf("memory: the secret guard failed, not writing: %w", err)
	}
	if len(found) > 0 {
		return fmt.Errorf("%w: line %d looks like a credential (key, token or password); leave secrets out of memory", ErrSecret, found[0].Line)
	}
	return nil
}

// Write stores e (Name checked, Body required), replacing an entry of the
// same name, and updates the index. It returns the entry as stored.
func (d *Dir) Write(e Entry) (Entry, error) {
	name, err := CheckName(e.Name)
	if err != nil {
		return Entry{}, err
	}
	e.Name = name
	if strings.TrimSpace(e.Body) == "" {
		return Entry{}, fmt.Errorf("%w: empty content", ErrInvalid)
	}
	switch e.Type {
	case "", TypeUser, TypeFeedback, TypeProject, TypeReference:
	default:
		return Entry{}, fmt.Errorf("%w: type %.20q: want user, feedback, project or reference", ErrInvalid, e.Type)
	}
	if n := len([]rune(oneLine(e.Description))); n > maxDescription {
		return Entry{}, fmt.Errorf("%w: the description has %d characters; keep it to one line under %d", ErrInvalid, n, maxDescription)
	}
	if err := d.WriteFile(name+".md", []byte(Render(e))); err != nil {
		return Entry{}, err
	}
	return d.Read(name)
}

// WriteFile writes content to rel (a path inside the directory, see
// Resolve) with every check Write makes: the secret guard, the per-entry
// cap and the directory's total cap; then it rewrites the index. Only
// Markdown files directly in the directory are memory; anything else is
// refused, and so is MEMORY.md (the index is derived from the entries).
func (d *Dir) WriteFile(rel string, content []byte) error {
	p, err := d.Resolve(rel)
	if err != nil {
		return err
	}
	if filepath.Dir(p) != d.root {
		return fmt.Errorf("%w: memory entries live directly in %s", ErrName, d.root)
	}
	if _, err := CheckName(filepath.Base(p)); err != nil || !strings.HasSuffix(p, ".md") {
		if err == nil {
			err = fmt.Errorf("%w: %q: memory entries are .md files", ErrName, filepath.Base(p))
		}
		return err
	}
	if int64(len(content)) > d.opt.MaxEntryBytes {
		return fmt.Errorf("%w: %d bytes; an entry holds at most %d KB (split it, or keep only what matters)", ErrTooLarge, len(content), d.opt.MaxEntryBytes>>10)
	}
	if err := d.scan(filepath.Base(p), string(content)); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	total, err := d.totalExcept(filepath.Base(p))
	if err != nil {
		return err
	}
	if total+int64(len(content)) > d.opt.MaxTotalBytes {
		return fmt.Errorf("%w: memory would hold %d bytes, over its %d KB; forget or shorten entries first", ErrTooLarge, total+int64(len(content)), d.opt.MaxTotalBytes>>10)
	}
	if err := atomicWrite(d.root, p, content); err != nil {
		return err
	}
	d.gen.Add(1)
	return d.updateIndexLocked()
}

// totalExcept sums the sizes of the entries other than file.
func (d *Dir) totalExcept(file string) (int64, error) {
	des, err := os.ReadDir(d.root)
	if err != nil {
		return 0, fmt.Errorf("memory: %w", err)
	}
	var total int64
	for _, de := range des {
		if !isEntryFile(de.Name()) || de.Name() == file || !de.Type().IsRegular() {
			continue
		}
		if fi, err := de.Info(); err == nil {
			total += fi.Size()
		}
	}
	return total, nil
}

func isEntryFile(n string) bool {
	return strings.HasSuffix(n, ".md") && n != IndexFile && !strings.HasPrefix(n, ".")
}

// atomicWrite writes p through a temporary file in dir renamed over it:
// the rename replaces a symlink at p instead of following it.
func atomicWrite(dir, p string, content []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(content)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o600)
	}
	if werr == nil {
		werr = os.Rename(tmp, p)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("memory: writing %s: %w", filepath.Base(p), werr)
	}
	return nil
}

// readRegular reads p, refusing anything but a regular file (a symlink
// planted in the directory could point at ~/.ssh/id_rsa) and anything
// over limit bytes.
func readRegular(p string, limit int64) ([]byte, os.FileInfo, error) {
	before, err := os.Lstat(p)
	if err != nil {
		return nil, nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: %s is not a regular file", ErrOutside, filepath.Base(p))
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	after, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	// Swapped for a link between the Lstat and the Open.
	if !os.SameFile(before, after) {
		return nil, nil, fmt.Errorf("%w: %s changed while it was opened", ErrOutside, filepath.Base(p))
	}
	if after.Size() > limit {
		return nil, nil, fmt.Errorf("%w: %s has %d bytes, over %d KB", ErrTooLarge, filepath.Base(p), after.Size(), limit>>10)
	}
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(f), limit+1))
	if err != nil {
		return nil, nil, err
	}
	return b, after, nil
}

// ReadFile reads rel (a path inside the directory, see Resolve), refusing
// symlinks and files over the entry cap: the read half of a restricted
// writer's Edit.
func (d *Dir) ReadFile(rel string) ([]byte, error) {
	p, err := d.Resolve(rel)
	if err != nil {
		return nil, err
	}
	b, _, err := readRegular(p, max(d.opt.MaxEntryBytes, MaxIndexBytes))
	return b, err
}

// Read returns the entry name.
func (d *Dir) Read(name string) (Entry, error) {
	n, err := CheckName(name)
	if err != nil {
		return Entry{}, err
	}
	b, fi, err := readRegular(d.entryPath(n), d.opt.MaxEntryBytes)
	if errors.Is(err, os.ErrNotExist) {
		return Entry{}, fmt.Errorf("%w: %q", ErrNoEntry, n)
	}
	if err != nil {
		return Entry{}, err
	}
	e := parse(n, string(b))
	e.Modified, e.Size = fi.ModTime(), fi.Size()
	return e, nil
}

// Delete removes the entry name and updates the index.
func (d *Dir) Delete(name string) error {
	n, err := CheckName(name)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// Remove deletes a symlink itself, never its target.
	if err := os.Remove(d.entryPath(n)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %q", ErrNoEntry, n)
		}
		return fmt.Errorf("memory: %w", err)
	}
	d.gen.Add(1)
	return d.updateIndexLocked()
}

// Skipped is a file in the directory List left out, and why.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// List returns the entries, by name, and the files it skipped (symlinks,
// files over the entry cap, unreadable ones).
func (d *Dir) List() ([]Entry, []Skipped, error) {
	des, err := os.ReadDir(d.root)
	if err != nil {
		return nil, nil, fmt.Errorf("memory: %w", err)
	}
	var out []Entry
	var skipped []Skipped
	for _, de := range des {
		if !isEntryFile(de.Name()) {
			continue
		}
		name := strings.TrimSuffix(de.Name(), ".md")
		if _, err := CheckName(name); err != nil {
			skipped = append(skipped, Skipped{de.Name(), "not a valid entry name"})
			continue
		}
		e, err := d.Read(name)
		if err != nil {
			skipped = append(skipped, Skipped{de.Name(), err.Error()})
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Name, b.Name) })
	return out, skipped, nil
}

// UpdateIndex rewrites MEMORY.md from the entries: one line per entry
// with its description, stale ones annotated, truncated by TruncateIndex.
func (d *Dir) UpdateIndex() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.updateIndexLocked()
}

func (d *Dir) updateIndexLocked() error {
	entries, _, err := d.List()
	if err != nil {
		return err
	}
	now := d.opt.Now()
	var b strings.Builder
	b.WriteString("# Memory index\n\n")
	for _, e := range entries {
		desc := e.Description
		if desc == "" {
			desc = firstLine(e.Body)
		}
		fmt.Fprintf(&b, "- [%s](%s.md)", e.Name, e.Name)
		if e.Type != "" {
			fmt.Fprintf(&b, " (%s)", e.Type)
		}
		if desc != "" {
			fmt.Fprintf(&b, " — %s", desc)
		}
		b.WriteString(IndexAnnotation(e.Modified, now, d.opt.Freshness.ThresholdFor(e.Type)))
		b.WriteByte('\n')
	}
	idx, _ := TruncateIndex(b.String())
	if err := atomicWrite(d.root, filepath.Join(d.root, IndexFile), []byte(idx)); err != nil {
		return err
	}
	d.gen.Add(1)
	return nil
}

// Index returns MEMORY.md as the prompt shows it (TruncateIndex applied,
// whoever wrote the file) and whether it was cut; "" when there is none.
func (d *Dir) Index() (string, bool, error) {
	b, _, err := readRegular(filepath.Join(d.root, IndexFile), 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	s, cut := TruncateIndex(string(b))
	return s, cut, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return strings.TrimLeft(s, "# ")
}
