package shell

// This file collects the files a script reads, so Read(...) deny rules
// apply to Bash as they do to the Read tool: input redirections, the
// scripts shells and source run, and the operands of commands known to
// read files. It is a list, not a proof: a program can open any file it
// likes (python -c, awk, a script on disk), and docs/security.md says so.

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// pendingRead is a read whose path may depend on variables, resolved
// once every assignment is known.
type pendingRead struct {
	w    word
	tree bool
}

// fileReaders read the files named by all their operands. Options given
// as separate words may be counted as operands too ("head -n 5 f" reads
// "5" and "f"): counting too much only makes a rule look at more names.
var fileReaders = setOf("cat", "tac", "nl", "head", "tail", "less", "more", "most", "bat", "batcat", "view",
	"vi", "vim", "nvim", "nano", "emacs", "ed", "ex", "base64", "base32", "basenc", "uuencode", "xxd", "od",
	"hexdump", "hd", "strings", "wc", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum",
	"b2sum", "cksum", "sum", "sort", "uniq", "cut", "paste", "join", "comm", "fold", "fmt", "pr", "expand",
	"unexpand", "column", "rev", "iconv", "dos2unix", "unix2dos", "diff", "diff3", "sdiff", "cmp", "patch",
	"split", "csplit", "shuf", "look", "file", "jq", "yq", "gron", "awk", "gawk", "mawk", "nawk", "sed",
	"perl", "python", "python2", "python3", "ruby", "node", "php", "sqlite3", "openssl", "gpg", "age",
	"zcat", "zless", "zmore", "bzcat", "xzcat", "zstdcat", "lzcat", "gzip", "gunzip", "bzip2", "bunzip2",
	"xz", "unxz", "zstd", "unzstd", "lz4", "lzma", "unlzma", "curl", "wget", "scp", "sftp",
	"nc", "ncat", "socat", "mail", "mutt", "lp", "lpr", "envsubst", "xclip", "xsel", "pbcopy", "wl-copy")

// treeReaders read whole directories named by their operands.
var treeReaders = setOf("zip", "7z", "7za", "jar", "rsync", "scp")

// copiers read their sources; the last operand (or -t DIR) is where
// they write.
var copiers = setOf("cp", "mv", "ln", "install")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// readFrom records a read of the file w names.
func (z *analyzer) readFrom(w word, tree bool) {
	switch w.val {
	case "", "-", "/dev/stdin", "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/tty":
		if w.literal() {
			return
		}
	}
	if _, fd := inputFd(w.val); fd && w.literal() {
		return // a descriptor: the file it holds was read where it was opened
	}
	if w.node != nil && onlyProcSubst(w.node) {
		return // a pipe from another command
	}
	z.readArgs = append(z.readArgs, pendingRead{w, tree})
}

// readWord records a read through a redirection.
func (z *analyzer) readWord(w *syntax.Word, tree bool) {
	ws := z.words([]*syntax.Word{w})
	if len(ws) != 1 {
		z.readFrom(word{val: printWord(w), kind: Dynamic, node: w}, tree)
		return
	}
	z.readFrom(ws[0], tree)
}

// reads records the files a command reads through its operands.
func (z *analyzer) reads(name string, args []word, c ctx) {
	ops := operandWords(args[1:])
	tree := false
	switch {
	case fileReaders[name]:
	case treeReaders[name]:
		tree = true
	case name == "tar":
		z.tarReads(args, c)
		return
	case copiers[name]:
		tree = true
		if dest := copyDest(wordVals(args[1:])); dest != "" {
			for i := len(ops) - 1; i >= 0; i-- {
				if ops[i].w.val == dest {
					ops = append(ops[:i], ops[i+1:]...)
					break
				}
			}
		}
	case name == "grep" || name == "egrep" || name == "fgrep" || name == "zgrep" || name == "rg" || name == "ag" || name == "ack":
		z.grepReads(name, args, c)
		return
	case name == "dd":
		for _, a := range args[1:] {
			if v, ok := strings.CutPrefix(a.val, "if="); ok {
				z.readFrom(word{val: v, kind: a.kind, node: a.node}, false)
			}
		}
		return
	default:
		return
	}
	for _, o := range ops {
		z.readFrom(o.w, tree)
	}
	if c.xargs {
		z.readFrom(word{val: "(names " + name + " gets from xargs)", kind: Dynamic}, tree)
	}
}

type operand struct {
	w     word
	index int
}

// operandWords are the words that are not options: after "--", words
// not starting with "-", the value of --opt=value, and the file of
// curl's @file and name=@file forms.
func operandWords(args []word) []operand {
	var out []operand
	dashdash := false
	for i, a := range args {
		v := a.val
		switch {
		case dashdash || !a.literal() && !strings.HasPrefix(v, "-"):
			out = append(out, operand{a, i})
		case v == "--":
			dashdash = true
		case strings.HasPrefix(v, "--") && strings.Contains(v, "="):
			_, val, _ := strings.Cut(v, "=")
			out = append(out, operand{word{val: strings.TrimPrefix(val, "@"), kind: a.kind, node: a.node}, i})
		case strings.HasPrefix(v, "-") && v != "-":
		default:
			if j := strings.Index(v, "=@"); j >= 0 {
				v = v[j+2:]
			} else if j := strings.Index(v, "=<"); j >= 0 {
				v = v[j+2:]
			}
			out = append(out, operand{word{val: strings.TrimPrefix(v, "@"), kind: a.kind, node: a.node}, i})
		}
	}
	return out
}

// tarReads: tar reads the trees its operands name (and the archive it
// is given). The first word may be old-style options without a dash
// (czf); -C DIR makes later operands relative to DIR.
func (z *analyzer) tarReads(args []word, c ctx) {
	words := args[1:]
	chdir := false
	if len(words) > 0 && words[0].literal() && !strings.HasPrefix(words[0].val, "-") {
		chdir = strings.Contains(words[0].val, "C")
		words = words[1:]
	}
	for _, w := range words {
		v := w.val
		if w.literal() && (strings.HasPrefix(v, "--dir") || len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.Contains(v, "C")) {
			chdir = true
		}
	}
	for _, o := range operandWords(words) {
		p := o.w
		if chdir && p.literal() && !strings.HasPrefix(p.val, "/") && !strings.HasPrefix(p.val, "~") {
			z.out.Reads = append(z.out.Reads, Path{Name: p.val, Kind: Literal, Tree: true, Unrooted: true})
			continue
		}
		z.readFrom(p, true)
	}
	if c.xargs {
		z.readFrom(word{val: "(names tar gets from xargs)", kind: Dynamic}, true)
	}
}

// grepReads: the first operand is the pattern unless -e or -f gives one;
// -r (and rg, ag, ack always) searches directories, the current one when
// no file is named. Options that cannot be parsed make every word count.
func (z *analyzer) grepReads(name string, args []word, c ctx) {
	spec := optSpec{"0123456789A:B:C:D:EFGHIJLNPRTUVX:abcd:e:f:hiLlm:noqRrsuvwxyZz", []string{"after-context=", "before-context=",
		"context=", "color=?", "colour=?", "count", "devices=", "directories=", "dereference-recursive", "exclude=",
		"exclude-from=", "exclude-dir=", "extended-regexp", "file=", "files-with-matches", "files-without-match",
		"fixed-strings", "basic-regexp", "perl-regexp", "help", "ignore-case", "no-ignore-case", "include=", "invert-match",
		"label=", "line-buffered", "line-number", "line-regexp", "max-count=", "no-filename", "no-messages", "null",
		"null-data", "only-matching", "quiet", "recursive", "regexp=", "silent", "text", "binary", "binary-files=",
		"byte-offset", "initial-tab", "unix-byte-offsets", "version", "with-filename", "word-regexp"}}
	recursive := name == "rg" || name == "ag" || name == "ack"
	var p parsedOpts
	if !recursive {
		p = spec.parse(args, 1)
	}
	if recursive || p.err != "" {
		// Count every word; a tree search may cover the current directory.
		for _, o := range operandWords(args[1:]) {
			z.readFrom(o.w, true)
		}
		z.readFrom(word{val: "."}, true)
		return
	}
	files := p.operands
	if !p.has("e", "regexp", "f", "file") && len(files) > 0 {
		files = files[1:]
	}
	for _, f := range p.values("f", "file") {
		z.readFrom(f, false)
	}
	recursive = p.has("r", "R", "recursive", "dereference-recursive")
	for _, d := range p.values("d", "directories") {
		recursive = recursive || d.val == "recurse" || !d.literal()
	}
	for _, f := range files {
		z.readFrom(f, recursive)
	}
	if c.xargs {
		z.readFrom(word{val: "(names " + name + " gets from xargs)", kind: Dynamic}, recursive)
	} else if len(files) == 0 && recursive {
		z.readFrom(word{val: "."}, true)
	}
}

// resolveReads turns the pending reads into paths, now that every
// variable's values are known: "$f" from for f in a b reads a and b, and
// $HOME/x reads ~/x.
func (z *analyzer) resolveReads() {
	for _, r := range z.readArgs {
		for _, p := range z.readPaths(r.w) {
			p.Tree = r.tree
			z.out.Reads = append(z.out.Reads, p)
		}
	}
}

func (z *analyzer) readPaths(w word) []Path {
	if w.kind != Dynamic || w.node == nil {
		return []Path{{Name: w.val, Kind: w.kind}}
	}
	if p, ok := z.homePath(w.node); ok {
		return []Path{{Name: p}}
	}
	if name, ok := simpleRef(w.node); ok {
		if vals, ok := z.values(name, quotedRef(w.node), nil); ok {
			return vals
		}
	}
	return []Path{{Name: w.val, Kind: Dynamic}}
}

// quotedRef: "$f" is not split or globbed; $f is.
func quotedRef(w *syntax.Word) bool {
	_, ok := w.Parts[0].(*syntax.DblQuoted)
	return ok
}

// values are the paths a variable may hold, when all are known.
func (z *analyzer) values(name string, quoted bool, seen map[string]bool) ([]Path, bool) {
	v := z.vars[name]
	if v == nil || z.anyVars || z.vars["IFS"] != nil || seen[name] || dataVars[name] {
		return nil, false
	}
	if seen == nil {
		seen = map[string]bool{}
	}
	seen[name] = true
	var out []Path
	for _, val := range v.values {
		switch {
		case val.ref != "":
			more, ok := z.values(val.ref, quoted, seen)
			if !ok {
				return nil, false
			}
			out = append(out, more...)
		case val.kind == Dynamic:
			return nil, false
		case quoted || val.kind == Glob:
			out = append(out, Path{Name: val.text, Kind: val.kind})
		default:
			for _, f := range strings.Fields(val.text) {
				kind := Literal
				if hasWildcard(f) {
					kind = Glob
				}
				out = append(out, Path{Name: f, Kind: kind})
			}
		}
	}
	return out, true
}

// homePath reads $HOME/rest or "$HOME"/rest as ~/rest when the script
// leaves HOME alone.
func (z *analyzer) homePath(w *syntax.Word) (string, bool) {
	var parts []syntax.WordPart
	for _, p := range w.Parts {
		if dq, ok := p.(*syntax.DblQuoted); ok {
			parts = append(parts, dq.Parts...)
			continue
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 || z.vars["HOME"] != nil || z.anyVars {
		return "", false
	}
	pe, ok := parts[0].(*syntax.ParamExp)
	if !ok || !plainParam(pe) || pe.Index != nil || pe.Param.Value != "HOME" {
		return "", false
	}
	rest, ok := literalText(&syntax.Word{Parts: parts[1:]})
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		return "", false
	}
	return "~" + rest, true
}
