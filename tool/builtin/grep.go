package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/tool"
)

// Grep has two backends with one output: ripgrep when it is on PATH, a Go
// walker otherwise. Both feed the same renderer with the same per-file
// line sets, and every choice that could make them differ is made here
// rather than left to either:
//
//   - the pattern is parsed by Go's regexp/syntax and handed to rg in Go's
//     printed form, so both engines see RE2 semantics (ASCII \w, \d, \s,
//     \b; rg would otherwise use Unicode classes);
//   - glob and type filters are applied by us on relative paths (rg's
//     --glob would let a positive glob override .gitignore and hidden-file
//     rules);
//   - a file holding a NUL byte anywhere is skipped (rg alone would report
//     matches found before a NUL beyond its first buffer);
//   - ignore rules are .gitignore files, in the searched tree and its
//     parents up to the enclosing repository root, and a repository's
//     .git/info/exclude, whether or not git is in use (rg:
//     --no-require-git, no .ignore/.rgignore, no global rules); the Go
//     walker matches them with go-git's gitignore package (gitignore.go,
//     shared with Glob);
//   - hidden files and directories below the search root are skipped
//     unless a .gitignore rule whitelists them (as in ripgrep), and
//     symlinks are not followed;
//   - content output comes in path order (rg --sort path, a sorted walk),
//     so output can stop early once the limit is reached; files are listed
//     newest first and counts in path order.
//
// Known differences: the Go walker skips files over 256 MiB (it loads
// files whole), and ripgrep 13's regex engine has bugs of its own (e.g.
// "$^" never matches).

const (
	grepMaxLineLen = 500 // characters shown of one content line
	// grepMaxFileGo bounds the files the Go walker loads whole; ripgrep
	// streams and has no such limit.
	grepMaxFileGo = 256 << 20
	grepBudget    = 30000 // bytes of output, under grepOutputCap
	grepOutputCap = 32000
)

const grepDescription = `Searches file contents with a regular expression (RE2 syntax, as in Go: "log.*Error", "func\\s+\\w+"; no lookaround or backreferences; escape literal braces, dots and parentheses, e.g. "interface\\{\\}").

- output_mode: "files_with_matches" (default: paths of matching files, most recently modified first), "content" (matching lines as path:line:text; -A, -B and -C add context lines, -n shows line numbers and is on by default), "count" (number of matching lines per file).
- Filter files with glob (e.g. "*.js", "**/*.{ts,tsx}"; several separated by spaces, "!" excludes) or type (e.g. "go", "py", "js", "ts", "rust", "java").
- Matches stay within one line unless multiline is true; then "." also matches newlines and a pattern may span lines.
- Skips files ignored by .gitignore, hidden files and directories, binary files, and files the permission rules do not let you read.
- head_limit keeps only the first N lines (content) or entries (files, counts).
- Use Grep rather than grep or rg through Bash.`

var grepSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "The regular expression to search for in file contents"},
    "path": {"type": "string", "description": "File or directory to search in (default: the workspace), absolute or relative to the workspace"},
    "glob": {"type": "string", "description": "Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\")"},
    "type": {"type": "string", "description": "File type to search (e.g. go, py, js, ts, rust, java): a shorthand for the usual globs of that language"},
    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "Output mode (default files_with_matches)"},
    "-i": {"type": "boolean", "description": "Case insensitive search"},
    "-n": {"type": "boolean", "description": "Show line numbers in content mode (default true)"},
    "-A": {"type": "integer", "minimum": 0, "description": "Number of lines to show after each match (content mode)"},
    "-B": {"type": "integer", "minimum": 0, "description": "Number of lines to show before each match (content mode)"},
    "-C": {"type": "integer", "minimum": 0, "description": "Number of lines to show before and after each match (content mode)"},
    "head_limit": {"type": "integer", "minimum": 0, "description": "Show only the first N output lines or entries (0: no limit)"},
    "multiline": {"type": "boolean", "description": "Let patterns span lines and . match newlines (default false)"}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)

// grepTypes maps Grep's type argument to file-name globs.
var grepTypes = map[string][]string{
	"c":          {"*.c", "*.h"},
	"cpp":        {"*.cpp", "*.cc", "*.cxx", "*.c++", "*.hpp", "*.hh", "*.hxx", "*.h", "*.inl"},
	"cs":         {"*.cs"},
	"css":        {"*.css", "*.scss", "*.sass", "*.less"},
	"dart":       {"*.dart"},
	"docker":     {"Dockerfile", "Dockerfile.*", "*.dockerfile"},
	"elixir":     {"*.ex", "*.exs"},
	"erlang":     {"*.erl", "*.hrl"},
	"go":         {"*.go"},
	"haskell":    {"*.hs", "*.lhs"},
	"html":       {"*.html", "*.htm", "*.xhtml"},
	"java":       {"*.java"},
	"js":         {"*.js", "*.jsx", "*.mjs", "*.cjs"},
	"json":       {"*.json", "*.jsonc", "*.jsonl"},
	"kotlin":     {"*.kt", "*.kts"},
	"lua":        {"*.lua"},
	"make":       {"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"},
	"md":         {"*.md", "*.markdown", "*.mdx"},
	"php":        {"*.php"},
	"proto":      {"*.proto"},
	"py":         {"*.py", "*.pyi"},
	"r":          {"*.r", "*.R", "*.Rmd"},
	"ruby":       {"*.rb", "*.rake", "Gemfile", "Rakefile"},
	"rust":       {"*.rs"},
	"scala":      {"*.scala", "*.sc"},
	"sh":         {"*.sh", "*.bash", "*.zsh", "*.ksh"},
	"sql":        {"*.sql"},
	"svelte":     {"*.svelte"},
	"swift":      {"*.swift"},
	"terraform":  {"*.tf", "*.tfvars"},
	"toml":       {"*.toml"},
	"ts":         {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"txt":        {"*.txt"},
	"vue":        {"*.vue"},
	"xml":        {"*.xml", "*.xsd", "*.xsl", "*.svg"},
	"yaml":       {"*.yaml", "*.yml"},
	"zig":        {"*.zig"},
	"markdown":   {"*.md", "*.markdown", "*.mdx"},
	"python":     {"*.py", "*.pyi"},
	"rb":         {"*.rb", "*.rake", "Gemfile", "Rakefile"},
	"rs":         {"*.rs"},
	"javascript": {"*.js", "*.jsx", "*.mjs", "*.cjs"},
	"typescript": {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"yml":        {"*.yaml", "*.yml"},
	"tf":         {"*.tf", "*.tfvars"},
	"kt":         {"*.kt", "*.kts"},
	"csharp":     {"*.cs"},
	"shell":      {"*.sh", "*.bash", "*.zsh", "*.ksh"},
}

type grepTool struct {
	ws wsConfine
	// forceGo makes tests exercise the Go walker when rg is installed.
	forceGo bool
}

// NewGrep returns the Grep tool: regular-expression search over the
// workspace with ripgrep, or an equivalent Go walker without it.
func NewGrep(cfg Config) tool.Tool { return &grepTool{ws: wsFrom(cfg)} }

func (t *grepTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "Grep",
		Description: grepDescription,
		InputSchema: grepSchema,
		Meta: tool.Meta{
			ReadOnly:        true,
			ConcurrencySafe: true,
			Effect:          tool.EffectRead,
			Permission:      tool.ClassReadOnly,
			OutputCap:       grepOutputCap,
		},
	}
}

type grepInput struct {
	Pattern         string `json:"pattern"`
	Path            string `json:"path"`
	Glob            string `json:"glob"`
	Type            string `json:"type"`
	OutputMode      string `json:"output_mode"`
	CaseInsensitive bool   `json:"-i"`
	LineNumbers     *bool  `json:"-n"`
	After           *int   `json:"-A"`
	Before          *int   `json:"-B"`
	Context         *int   `json:"-C"`
	HeadLimit       int    `json:"head_limit"`
	Multiline       bool   `json:"multiline"`
}

const (
	grepModeContent = "content"
	grepModeFiles   = "files_with_matches"
	grepModeCount   = "count"
)

// grepQuery is a validated search, the same for both backends.
type grepQuery struct {
	root       string
	rootIsFile bool
	re         *regexp.Regexp // Go's matcher
	rgPattern  string         // the same expression in ripgrep's syntax
	multiline  bool
	mode       string
	before     int
	after      int
	filter     *grepFilter // nil: every file
	// show is the caller's Read rules (policy.ReadFilter): a file it
	// refuses is not searched, its name and lines never shown.
	show func(path string) bool
}

// grepLine is one output line of a file: a matching line or context.
type grepLine struct {
	num   int
	text  []byte // without the line terminator
	match bool
}

// grepFile is what a backend found in one file.
type grepFile struct {
	path  string
	lines []grepLine // ascending by num
}

func (f *grepFile) matches() int {
	n := 0
	for _, l := range f.lines {
		if l.match {
			n++
		}
	}
	return n
}

// grepBackend searches q and calls emit for each file with a match; when
// ordered, in path order. emit returns false to stop the search.
type grepBackend func(ctx context.Context, q *grepQuery, ordered bool, emit func(grepFile) bool) error

func (t *grepTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in grepInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("invalid input: %v", err), nil
	}
	q, err := t.query(ctx, in)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	backend, name := grepBackend(grepRunGo), "go"
	if !t.forceGo {
		if rg, err := exec.LookPath("rg"); err == nil {
			backend, name = grepRunRG(rg), "rg"
		}
	}
	if q.rootIsFile && grepHasNUL(q.root) {
		return tool.Errorf("%s is a binary file; Grep searches text files", q.root), nil
	}
	lineNums := in.LineNumbers == nil || *in.LineNumbers
	text, files, err := grepExecute(ctx, backend, q, lineNums, in.HeadLimit)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	res := tool.Text(text)
	res.Data = map[string]any{"backend": name, "files": files}
	return res, nil
}

// query validates the input into a search.
func (t *grepTool) query(ctx context.Context, in grepInput) (*grepQuery, error) {
	q := &grepQuery{mode: in.OutputMode, multiline: in.Multiline}
	if q.mode == "" {
		q.mode = grepModeFiles
	}
	switch q.mode {
	case grepModeContent, grepModeFiles, grepModeCount:
	default:
		return nil, fmt.Errorf("output_mode must be content, files_with_matches or count, not %q", in.OutputMode)
	}
	var err error
	q.re, q.rgPattern, err = grepCompile(in.Pattern, in.CaseInsensitive, in.Multiline)
	if err != nil {
		return nil, err
	}
	if q.mode == grepModeContent {
		c := 0
		if in.Context != nil {
			c = *in.Context
		}
		q.before, q.after = c, c
		if in.Before != nil {
			q.before = *in.Before
		}
		if in.After != nil {
			q.after = *in.After
		}
	}
	if q.filter, err = grepNewFilter(in.Glob, in.Type); err != nil {
		return nil, err
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	if q.root, err = t.ws.resolveChecked(ctx, p); err != nil {
		return nil, err
	}
	q.show = policy.ReadFilter(ctx, q.root)
	if !q.show(q.root) {
		return nil, fmt.Errorf("a Read permission rule denies reading %s", q.root)
	}
	fi, err := os.Stat(q.root)
	if err != nil {
		return nil, fmt.Errorf("path does not exist: %s", q.root)
	}
	switch {
	case fi.Mode().IsRegular():
		q.rootIsFile = true
	case !fi.IsDir():
		return nil, fmt.Errorf("%s is neither a file nor a directory", q.root)
	}
	return q, nil
}

// grepCompile checks pattern and returns Go's matcher and the same
// expression printed for ripgrep. The flags every search uses are folded
// into the pattern so both engines get them from one place: (?m) because
// ripgrep's ^ and $ always match at line boundaries, (?s) for multiline.
func grepCompile(pattern string, fold, multiline bool) (*regexp.Regexp, string, error) {
	flags := "m"
	if fold {
		flags += "i"
	}
	if multiline {
		flags += "s"
	}
	prefix := "(?" + flags + ")"
	tree, err := syntax.Parse(prefix+pattern, syntax.Perl)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return nil, "", fmt.Errorf("invalid regular expression %q: %s at %q (RE2 syntax: escape literal braces, dots and parentheses; no lookaround or backreferences)",
				pattern, se.Code, strings.TrimPrefix(se.Expr, prefix))
		}
		return nil, "", fmt.Errorf("invalid regular expression %q: %v", pattern, err)
	}
	if !multiline && grepMatchesNewline(tree) {
		return nil, "", errors.New(`the pattern contains a newline (\n), which cannot match within one line; set multiline to true to match across lines`)
	}
	rgPattern := grepRustSyntax(tree.String())
	grepNoInvalidUTF8(tree)
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, "", fmt.Errorf("invalid regular expression: %v", err)
	}
	return re, rgPattern, nil
}

// grepSentinel stands in, for the Go matcher, for each byte of a file that
// is not UTF-8 (Go would otherwise read it as U+FFFD, which "." matches;
// ripgrep matches such bytes with nothing). It is a noncharacter, so real
// text does not contain it.
const grepSentinel = utf8.MaxRune

// grepNoInvalidUTF8 takes grepSentinel out of "." and every class of the
// Go matcher, so that it matches bytes that are not UTF-8 as ripgrep does:
// not at all.
func grepNoInvalidUTF8(re *syntax.Regexp) {
	const bad = grepSentinel
	switch re.Op {
	case syntax.OpAnyChar:
		re.Op, re.Rune = syntax.OpCharClass, []rune{0, bad - 1}
	case syntax.OpAnyCharNotNL:
		re.Op, re.Rune = syntax.OpCharClass, []rune{0, '\n' - 1, '\n' + 1, bad - 1}
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi == bad {
				hi--
			}
			if lo <= hi {
				out = append(out, lo, hi)
			}
		}
		if len(out) == 0 {
			re.Op, re.Rune, re.Flags = syntax.OpNoMatch, nil, 0
			return
		}
		re.Rune = out
	}
	for _, sub := range re.Sub {
		grepNoInvalidUTF8(sub)
	}
}

// grepSanitize replaces each byte of b that is not UTF-8 with grepSentinel.
func grepSanitize(b []byte) []byte {
	out := make([]byte, 0, len(b)+64)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, grepSentinel)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

// grepMatchesNewline reports a literal newline in the expression; ripgrep
// rejects those outside multiline mode.
func grepMatchesNewline(re *syntax.Regexp) bool {
	if re.Op == syntax.OpLiteral {
		for _, r := range re.Rune {
			if r == '\n' {
				return true
			}
		}
	}
	for _, s := range re.Sub {
		if grepMatchesNewline(s) {
			return true
		}
	}
	return false
}

// grepRustSyntax adapts Go's printed expression for ripgrep: Go's word
// boundaries are ASCII, ripgrep's Unicode unless (?-u:...) asks otherwise.
// Everything else Go prints (classes spelled out, \x{...} escapes, (?i:...)
// groups) means the same to ripgrep.
func grepRustSyntax(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		switch n := s[i+1]; n {
		case 'b', 'B':
			b.WriteString(`(?-u:\` + string(n) + `)`)
		default:
			b.WriteByte(c)
			b.WriteByte(n)
		}
		i++
	}
	return b.String()
}

// grepFilter is the glob and type selection, matched against a file's
// slash-separated path relative to the search root. Like ripgrep's globs,
// a pattern without "/" matches the file name at any depth.
type grepFilter struct {
	include []string
	exclude []string
	types   []string
}

func grepNewFilter(globs, typ string) (*grepFilter, error) {
	f := &grepFilter{}
	for _, g := range strings.Fields(globs) {
		neg := strings.HasPrefix(g, "!")
		g = strings.TrimPrefix(strings.TrimPrefix(g, "!"), "/")
		if g == "" || !doublestar.ValidatePattern(g) {
			return nil, fmt.Errorf("invalid glob pattern %q", g)
		}
		if neg {
			f.exclude = append(f.exclude, g)
		} else {
			f.include = append(f.include, g)
		}
	}
	if typ != "" {
		pats, ok := grepTypes[strings.ToLower(typ)]
		if !ok {
			names := make([]string, 0, len(grepTypes))
			for k := range grepTypes {
				names = append(names, k)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("unknown file type %q; known types: %s (or use glob)", typ, strings.Join(names, ", "))
		}
		f.types = pats
	}
	if len(f.include)+len(f.exclude)+len(f.types) == 0 {
		return nil, nil
	}
	return f, nil
}

func (f *grepFilter) match(rel string) bool {
	if f == nil {
		return true
	}
	base := path.Base(rel)
	if len(f.types) > 0 && !grepAnyGlob(f.types, rel, base) {
		return false
	}
	if grepAnyGlob(f.exclude, rel, base) {
		return false
	}
	return len(f.include) == 0 || grepAnyGlob(f.include, rel, base)
}

func grepAnyGlob(globs []string, rel, base string) bool {
	for _, g := range globs {
		name := base
		if strings.Contains(g, "/") {
			name = rel
		}
		if doublestar.MatchUnvalidated(g, name) {
			return true
		}
	}
	return false
}

// grepRel is a found file's slash path relative to the search root.
func grepRel(root, p string) string {
	return filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, root), string(filepath.Separator)))
}

// grepPathLess orders paths component by component, as a sorted directory
// walk visits them ("a/b" before "a-c"): the separator sorts first.
func grepPathLess(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return true
		}
		if cb == '/' {
			return false
		}
		return ca < cb
	}
	return len(a) < len(b)
}

// grepHasNUL reports a NUL byte anywhere in the file; such files are
// treated as binary and skipped.
func grepHasNUL(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return true
	}
	defer f.Close()
	buf := make([]byte, 64*1024)
	for {
		n, err := f.Read(buf)
		if bytes.IndexByte(buf[:n], 0) >= 0 {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// grepExecute runs the search and renders its output.
func grepExecute(ctx context.Context, backend grepBackend, q *grepQuery, lineNums bool, headLimit int) (string, int, error) {
	switch q.mode {
	case grepModeContent:
		r := &grepContent{lineNums: lineNums, context: q.before > 0 || q.after > 0, headLimit: headLimit}
		files := 0
		err := backend(ctx, q, true, func(f grepFile) bool {
			files++
			return r.add(f)
		})
		if err != nil {
			return "", 0, err
		}
		return r.String(), files, nil
	case grepModeCount:
		type entry struct {
			path string
			n    int
		}
		var entries []entry
		err := backend(ctx, q, false, func(f grepFile) bool {
			entries = append(entries, entry{f.path, f.matches()})
			return true
		})
		if err != nil {
			return "", 0, err
		}
		if len(entries) == 0 {
			return "No matches found", 0, nil
		}
		sort.Slice(entries, func(i, j int) bool { return grepPathLess(entries[i].path, entries[j].path) })
		total := 0
		lines := make([]string, len(entries))
		for i, e := range entries {
			total += e.n
			lines[i] = e.path + ":" + strconv.Itoa(e.n)
		}
		out := grepList(lines, headLimit, "")
		return out + fmt.Sprintf("\n\nFound %d matching %s across %d %s.", total, grepPlural(total, "line", "lines"), len(entries), grepPlural(len(entries), "file", "files")), len(entries), nil
	default:
		type entry struct {
			path  string
			mtime time.Time
		}
		var entries []entry
		err := backend(ctx, q, false, func(f grepFile) bool {
			e := entry{path: f.path}
			if fi, err := os.Stat(f.path); err == nil {
				e.mtime = fi.ModTime()
			}
			entries = append(entries, e)
			return true
		})
		if err != nil {
			return "", 0, err
		}
		if len(entries) == 0 {
			return "No files found", 0, nil
		}
		sort.Slice(entries, func(i, j int) bool {
			if !entries[i].mtime.Equal(entries[j].mtime) {
				return entries[i].mtime.After(entries[j].mtime)
			}
			return grepPathLess(entries[i].path, entries[j].path)
		})
		lines := make([]string, len(entries))
		for i, e := range entries {
			lines[i] = e.path
		}
		header := fmt.Sprintf("Found %d %s\n", len(entries), grepPlural(len(entries), "file", "files"))
		return grepList(lines, headLimit, header), len(entries), nil
	}
}

func grepPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// grepList joins entries under header, within head_limit and the output
// budget, saying what was left out.
func grepList(lines []string, headLimit int, header string) string {
	var b strings.Builder
	b.WriteString(header)
	shown := 0
	for _, l := range lines {
		if (headLimit > 0 && shown == headLimit) || b.Len()+len(l)+1 > grepBudget {
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
		shown++
	}
	if shown < len(lines) {
		fmt.Fprintf(&b, "(showing %d of %d entries", shown, len(lines))
		if headLimit > 0 && shown == headLimit {
			b.WriteString("; raise head_limit to see more)")
		} else {
			b.WriteString("; narrow the search with path, glob or type, or use head_limit)")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// grepContent renders content mode like ripgrep: "path:N:text" for
// matching lines, "path-N-text" for context, "--" between groups of
// non-adjacent lines when context is on.
type grepContent struct {
	lineNums  bool
	context   bool
	headLimit int

	b        strings.Builder
	lines    int
	lastPath string
	lastNum  int
	stop     string // why output stopped early
}

func (r *grepContent) add(f grepFile) bool {
	for _, l := range f.lines {
		if r.context && r.lines > 0 && (f.path != r.lastPath || l.num != r.lastNum+1) {
			if !r.put("--") {
				return false
			}
		}
		sep := "-"
		if l.match {
			sep = ":"
		}
		var s strings.Builder
		s.WriteString(f.path)
		s.WriteString(sep)
		if r.lineNums {
			s.WriteString(strconv.Itoa(l.num))
			s.WriteString(sep)
		}
		s.WriteString(grepShowLine(l.text))
		if !r.put(s.String()) {
			return false
		}
		r.lastPath, r.lastNum = f.path, l.num
	}
	return true
}

func (r *grepContent) put(s string) bool {
	if r.headLimit > 0 && r.lines == r.headLimit {
		r.stop = fmt.Sprintf("(showing the first %d lines; raise head_limit to see more)", r.headLimit)
		return false
	}
	if r.lines > 0 && r.b.Len()+len(s)+1 > grepBudget {
		r.stop = fmt.Sprintf("(output stopped after %d lines at the size limit; narrow the search with path, glob or type, or use files_with_matches or count)", r.lines)
		return false
	}
	r.b.WriteString(s)
	r.b.WriteByte('\n')
	r.lines++
	return true
}

func (r *grepContent) String() string {
	if r.lines == 0 {
		return "No matches found"
	}
	out := r.b.String()
	if r.stop != "" {
		out += r.stop
	}
	return strings.TrimSuffix(out, "\n")
}

func grepShowLine(b []byte) string {
	b = bytes.TrimSuffix(b, []byte("\r"))
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if utf8.RuneCountInString(s) > grepMaxLineLen {
		s = string([]rune(s)[:grepMaxLineLen]) + " ... [line truncated]"
	}
	return s
}

// grepLinesFrom splits a ripgrep "lines" value (one or more lines, each
// normally ending in \n) starting at line number first.
func grepLinesFrom(text []byte, first int, match bool) []grepLine {
	text = bytes.TrimSuffix(text, []byte("\n"))
	parts := bytes.Split(text, []byte("\n"))
	out := make([]grepLine, len(parts))
	for i, p := range parts {
		out[i] = grepLine{num: first + i, text: p, match: match}
	}
	return out
}

// grepNormalize sorts a file's lines and merges duplicates, a match
// winning over context.
func grepNormalize(lines []grepLine) []grepLine {
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].num < lines[j].num })
	out := lines[:0]
	for _, l := range lines {
		if n := len(out); n > 0 && out[n-1].num == l.num {
			out[n-1].match = out[n-1].match || l.match
			continue
		}
		out = append(out, l)
	}
	return out
}

// --- ripgrep backend ---

type grepRGData struct {
	Text  *string `json:"text"`
	Bytes string  `json:"bytes"`
}

func (d grepRGData) value() []byte {
	if d.Text != nil {
		return []byte(*d.Text)
	}
	b, _ := base64.StdEncoding.DecodeString(d.Bytes)
	return b
}

type grepRGMessage struct {
	Type string `json:"type"`
	Data struct {
		Path       grepRGData `json:"path"`
		Lines      grepRGData `json:"lines"`
		LineNumber int        `json:"line_number"`
	} `json:"data"`
}

// grepRunRG returns the ripgrep backend using the binary at rg.
func grepRunRG(rg string) grepBackend {
	return func(ctx context.Context, q *grepQuery, ordered bool, emit func(grepFile) bool) error {
		args := []string{
			"--json", "--no-config", "--no-messages",
			"--no-require-git", "--no-ignore-global", "--no-ignore-dot",
			"--encoding", "none",
		}
		if q.multiline {
			args = append(args, "--multiline")
		}
		if q.before > 0 {
			args = append(args, "--before-context", strconv.Itoa(q.before))
		}
		if q.after > 0 {
			args = append(args, "--after-context", strconv.Itoa(q.after))
		}
		if ordered {
			args = append(args, "--sort", "path")
		}
		if q.mode == grepModeFiles {
			args = append(args, "--max-count", "1")
		}
		args = append(args, "--regexp", q.rgPattern, "--", q.root)

		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cmd := exec.CommandContext(rctx, rg, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &grepCapped{buf: &stderr, max: 4096}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("cannot run ripgrep: %v", err)
		}
		br := bufio.NewReaderSize(stdout, 256*1024)
		var cur *grepFile
		stopped := false
		var perr error
		for !stopped {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var m grepRGMessage
				if jerr := json.Unmarshal(line, &m); jerr != nil {
					perr = fmt.Errorf("cannot parse ripgrep output: %v", jerr)
					break
				}
				switch m.Type {
				case "begin":
					cur = &grepFile{path: string(m.Data.Path.value())}
				case "match", "context":
					if cur != nil {
						cur.lines = append(cur.lines, grepLinesFrom(m.Data.Lines.value(), m.Data.LineNumber, m.Type == "match")...)
					}
				case "end":
					if cur != nil && grepKeepRG(q, cur) {
						cur.lines = grepNormalize(cur.lines)
						if !emit(*cur) {
							stopped = true
						}
					}
					cur = nil
				}
			}
			if err != nil {
				break
			}
		}
		if stopped || perr != nil {
			cancel()
		}
		werr := cmd.Wait()
		if perr != nil {
			return perr
		}
		if stopped {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var ee *exec.ExitError
		if errors.As(werr, &ee) && ee.ExitCode() == 2 && strings.TrimSpace(stderr.String()) != "" {
			return fmt.Errorf("ripgrep: %s", strings.TrimSpace(stderr.String()))
		}
		if werr != nil && !errors.As(werr, &ee) {
			return fmt.Errorf("ripgrep: %v", werr)
		}
		return nil
	}
}

// grepKeepRG applies the filters ripgrep was not given: glob and type, and
// the NUL-anywhere binary rule.
func grepKeepRG(q *grepQuery, f *grepFile) bool {
	if !q.rootIsFile && !q.filter.match(grepRel(q.root, f.path)) {
		return false
	}
	if !q.show(f.path) {
		return false
	}
	return q.rootIsFile || !grepHasNUL(f.path)
}

// grepCapped keeps the first max bytes written to it.
type grepCapped struct {
	buf *bytes.Buffer
	max int
}

func (c *grepCapped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// --- Go backend ---

func grepRunGo(ctx context.Context, q *grepQuery, _ bool, emit func(grepFile) bool) error {
	if q.rootIsFile {
		if f, ok := grepSearchFile(q, q.root); ok {
			emit(f)
		}
		return nil
	}
	w := &grepWalker{ctx: ctx, q: q, emit: emit}
	w.walk(q.root, parentIgnores(q.root))
	return ctx.Err()
}

type grepWalker struct {
	ctx   context.Context
	q     *grepQuery
	emit  func(grepFile) bool
	stop  bool
	count int
}

// walk visits dir in name order, as ripgrep --sort path does. ign holds
// the ignore rules of dir's ancestors.
func (w *grepWalker) walk(dir string, ign *ignoreLevel) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	ign = enterDir(dir, entries, ign)
	for _, e := range entries {
		if w.stop {
			return
		}
		if w.count++; w.count%256 == 0 && w.ctx.Err() != nil {
			w.stop = true
			return
		}
		name := e.Name()
		full := filepath.Join(dir, name)
		switch t := e.Type(); {
		case t.IsDir():
			if !ign.skip(full, name, true) {
				w.walk(full, ign)
			}
		case t.IsRegular():
			if ign.skip(full, name, false) || !w.q.filter.match(grepRel(w.q.root, full)) || !w.q.show(full) {
				continue
			}
			if f, ok := grepSearchFile(w.q, full); ok && !w.emit(f) {
				w.stop = true
			}
		}
	}
}

// grepSearchFile searches one file with Go's regexp; ok is false when
// nothing matched or the file is binary or unreadable.
func grepSearchFile(q *grepQuery, p string) (grepFile, bool) {
	if fi, err := os.Stat(p); err != nil || fi.Size() > grepMaxFileGo {
		return grepFile{}, false
	}
	data, err := os.ReadFile(p)
	if err != nil || bytes.IndexByte(data, 0) >= 0 || len(data) == 0 {
		return grepFile{}, false
	}
	// Matching runs on hay, output shows data; both have the same lines.
	hay := data
	if !utf8.Valid(data) {
		hay = grepSanitize(data)
	}
	starts, hayStarts := grepLineStarts(data), grepLineStarts(hay)
	lineText := func(b []byte, starts []int, i int) []byte {
		end := len(b)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		return bytes.TrimSuffix(b[starts[i]:end], []byte("\n"))
	}
	lineOf := func(off int) int {
		return sort.Search(len(hayStarts), func(i int) bool { return hayStarts[i] > off }) - 1
	}
	matched := make([]bool, len(starts))
	found := false
	if q.multiline {
		// Iterate the way ripgrep's multiline searcher does: each search
		// runs on the rest of the file as a new haystack, so ^ and \A can
		// match where the previous match ended. After an empty match
		// ripgrep steps one byte; stepping a whole character finds the
		// same lines without slicing a character.
		for pos := 0; pos < len(hay); {
			loc := q.re.FindIndex(hay[pos:])
			if loc == nil {
				break
			}
			s, e := pos+loc[0], pos+loc[1]
			if s == e {
				_, size := utf8.DecodeRune(hay[e:])
				pos = e + max(size, 1)
			} else {
				pos = e
			}
			if s == len(hay) && hay[len(hay)-1] == '\n' {
				continue // an empty match after the final newline is on no line
			}
			first, last := lineOf(s), lineOf(e)
			if e > hayStarts[first] && hay[e-1] == '\n' {
				last = lineOf(e - 1)
			}
			for i := first; i <= last; i++ {
				matched[i] = true
			}
			found = true
		}
	} else {
		for i := range hayStarts {
			if q.re.Match(lineText(hay, hayStarts, i)) {
				matched[i] = true
				found = true
			}
		}
	}
	if !found {
		return grepFile{}, false
	}
	f := grepFile{path: p}
	if q.mode == grepModeFiles {
		return f, true
	}
	show := make([]bool, len(starts))
	for i, m := range matched {
		if !m {
			continue
		}
		for j := max(i-q.before, 0); j <= min(i+q.after, len(starts)-1); j++ {
			show[j] = true
		}
	}
	for i := range starts {
		if show[i] {
			f.lines = append(f.lines, grepLine{num: i + 1, text: lineText(data, starts, i), match: matched[i]})
		}
	}
	return f, true
}

// grepLineStarts returns the offset of each line of b; a final newline
// ends the last line rather than starting an empty one.
func grepLineStarts(b []byte) []int {
	if len(b) == 0 {
		return nil
	}
	starts := []int{0}
	for i, c := range b {
		if c == '\n' && i+1 < len(b) {
			starts = append(starts, i+1)
		}
	}
	return starts
}
