package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/weft-run/weft/internal/realpath"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

const editDescription = `Replaces exact text in a file: old_string becomes new_string.

- Read the file in this session first; the edit is refused if the file changed on disk since.
- old_string must match the file exactly, including indentation and line breaks. Copy it from Read's output without the line-number prefix (number and tab).
- old_string must occur exactly once: include enough surrounding lines to make it unique, or set replace_all to replace every occurrence (e.g. to rename a variable).
- An empty old_string with a file_path that does not exist creates the file with new_string as its content.
- A new_string that looks like it contains secrets (API keys, tokens, passwords, private keys) is refused: have the code read them from the environment instead.`

var editSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The path of the file to modify, absolute or relative to the workspace"},
    "old_string": {"type": "string", "description": "The text to replace"},
    "new_string": {"type": "string", "description": "The text to replace it with (must differ from old_string)"},
    "replace_all": {"type": "boolean", "default": false, "description": "Replace every occurrence of old_string (default false)"}
  },
  "required": ["file_path", "old_string", "new_string"],
  "additionalProperties": false
}`)

const (
	editSnippetContext = 4  // lines shown around the edit
	editSnippetMax     = 40 // lines of the edited region shown at most
)

type editTool struct {
	ws    wsConfine
	guard secret.Guard
}

// NewEdit returns the Edit tool: exact string replacement in a file the
// session has read, written atomically; new text that looks like it holds
// secrets is refused (cfg.Guard).
func NewEdit(cfg Config) tool.Tool { return &editTool{ws: wsFrom(cfg), guard: guardFrom(cfg)} }

func (t *editTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "Edit",
		Description: editDescription,
		InputSchema: editSchema,
		Meta: tool.Meta{
			Effect:     tool.EffectWrite,
			Permission: tool.ClassFile,
			PathArg:    "file_path",
		},
	}
}

type editInput struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func (t *editTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in editInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("invalid input: %v", err), nil
	}
	path, err := t.ws.resolveChecked(ctx, in.FilePath)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	if in.OldString == in.NewString {
		return tool.Errorf("old_string and new_string are identical; there is nothing to change"), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("not edited: %v", err), nil
	}
	sess := wsSession(call)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if in.OldString != "" {
			return tool.Errorf("File does not exist: %s (to create a file, use Write, or Edit with an empty old_string)", path), nil
		}
		return t.create(sess, path, in.NewString)
	}
	if err != nil {
		return tool.Errorf("cannot edit %s: %v", path, err), nil
	}
	if fi.IsDir() {
		return tool.Errorf("%s is a directory; give the path of a file", path), nil
	}
	if err := wsCheckSeen(sess, path, fi, "editing"); err != nil {
		return tool.Errorf("%v", err), nil
	}
	data, err := realpath.ReadFile(path)
	if err != nil {
		return tool.Errorf("cannot read %s: %v", path, err), nil
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return tool.Errorf("%s is a binary file; Edit changes text files", path), nil
	}
	content := string(data)

	oldS, newS := in.OldString, in.NewString
	if oldS == "" {
		if content != "" {
			return tool.Errorf("old_string is empty but %s is not; give the text to replace, or use Write to replace the whole file", path), nil
		}
		return t.replaceWhole(sess, path, fi, newS)
	}
	count := strings.Count(content, oldS)
	if count == 0 && strings.Contains(content, "\r\n") && strings.Contains(oldS, "\n") && !strings.Contains(oldS, "\r\n") {
		// Read shows lines without their \r; match the file's line endings.
		oldS = strings.ReplaceAll(oldS, "\n", "\r\n")
		newS = strings.ReplaceAll(strings.ReplaceAll(newS, "\r\n", "\n"), "\n", "\r\n")
		count = strings.Count(content, oldS)
	}
	if count == 0 {
		return tool.Errorf("%s", editNotFound(path, content, in.OldString)), nil
	}
	if count > 1 && !in.ReplaceAll {
		return tool.Errorf("old_string occurs %d times in %s; add more surrounding context to make it unique, or set replace_all to replace every occurrence", count, path), nil
	}
	at := strings.Index(content, oldS)
	var updated string
	if in.ReplaceAll {
		updated = strings.ReplaceAll(content, oldS, newS)
	} else {
		updated = content[:at] + newS + content[at+len(oldS):]
	}
	if res, blocked := secretCheck(t.guard, t.ws, "Edit", "new_string", path, func(scan secretScan) (int, error) {
		return editSecrets(scan, content, updated, oldS, newS, in.ReplaceAll)
	}); blocked {
		return res, nil
	}
	nfi, err := writeAtomic(path, []byte(updated), fi.Mode().Perm())
	if err != nil {
		return tool.Errorf("cannot write %s: %v", path, err), nil
	}
	sess.MarkRead(path, wsStamp(nfi))

	head := fmt.Sprintf("Updated %s.", path)
	if in.ReplaceAll {
		head = fmt.Sprintf("Updated %s: replaced %d occurrences.", path, count)
	}
	res := tool.Text(head + " The edited region now reads:\n" + editSnippet(updated, at, len(newS)))
	res.Data = map[string]any{"path": path, "replacements": count}
	return res, nil
}

// create makes a new file from new_string (Edit with an empty old_string).
func (t *editTool) create(sess *tool.Session, path, content string) (tool.Result, error) {
	if res, blocked := secretCheck(t.guard, t.ws, "Edit", "new_string", path, func(scan secretScan) (int, error) {
		ms, err := scan(content)
		return len(ms), err
	}); blocked {
		return res, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return tool.Errorf("cannot create the directory for %s: %v", path, err), nil
	}
	nfi, err := writeAtomic(path, []byte(content), writeNewFileMode())
	if err != nil {
		return tool.Errorf("cannot write %s: %v", path, err), nil
	}
	sess.MarkRead(path, wsStamp(nfi))
	res := tool.Text(fmt.Sprintf("Created %s (%s)", path, writeLines(writeCountLines(content))))
	res.Data = map[string]any{"path": path, "created": true}
	return res, nil
}

// replaceWhole fills an existing empty file.
func (t *editTool) replaceWhole(sess *tool.Session, path string, fi fs.FileInfo, content string) (tool.Result, error) {
	if res, blocked := secretCheck(t.guard, t.ws, "Edit", "new_string", path, func(scan secretScan) (int, error) {
		ms, err := scan(content)
		return len(ms), err
	}); blocked {
		return res, nil
	}
	nfi, err := writeAtomic(path, []byte(content), fi.Mode().Perm())
	if err != nil {
		return tool.Errorf("cannot write %s: %v", path, err), nil
	}
	sess.MarkRead(path, wsStamp(nfi))
	res := tool.Text(fmt.Sprintf("Updated %s (%s)", path, writeLines(writeCountLines(content))))
	res.Data = map[string]any{"path": path, "replacements": 1}
	return res, nil
}

// editSecrets counts the secrets an edit adds. The file may hold secrets
// already (a .env being edited): those must not block unrelated edits, so
// only secrets on the edited lines of the result count; plus, for secrets
// that only form with the surrounding text or start on an untouched line
// (a key block whose body is added), any growth in the file's total; plus
// whatever new_string holds on its own.
func editSecrets(scan secretScan, content, updated, oldS, newS string, all bool) (int, error) {
	alone, err := scan(newS)
	if err != nil {
		return 0, err
	}
	before, err := scan(content)
	if err != nil {
		return 0, err
	}
	after, err := scan(updated)
	if err != nil {
		return 0, err
	}
	onEdited := 0
	if len(after) > 0 {
		ranges := editedLines(content, updated, oldS, newS, all)
		for _, m := range after {
			for _, r := range ranges {
				if r[0] <= m.Line && m.Line <= r[1] {
					onEdited++
					break
				}
			}
		}
	}
	return max(len(alone), onEdited, len(after)-len(before)), nil
}

// editedLines returns the 1-based line ranges the replacement text occupies
// in updated.
func editedLines(content, updated, oldS, newS string, all bool) [][2]int {
	span := strings.Count(newS, "\n")
	var ranges [][2]int
	line, scanned := 1, 0 // line number of updated[scanned]
	shift := 0            // how far updated positions are from content positions
	for from := 0; ; {
		i := strings.Index(content[from:], oldS)
		if i < 0 {
			break
		}
		pos := from + i + shift
		line += strings.Count(updated[scanned:pos], "\n")
		scanned = pos
		ranges = append(ranges, [2]int{line, line + span})
		if !all {
			break
		}
		from += i + len(oldS)
		shift += len(newS) - len(oldS)
	}
	return ranges
}

var editLineNumberPrefix = regexp.MustCompile(`(?m)^\s*\d+\t`)

// editNotFound explains a missing old_string, with a hint when the text is
// there up to whitespace or carries Read's line-number prefixes.
func editNotFound(path, content, old string) string {
	msg := fmt.Sprintf("old_string was not found in %s", path)
	switch {
	case editLineNumberPrefix.MatchString(old) && strings.Contains(editNormalize(content), editNormalize(editLineNumberPrefix.ReplaceAllString(old, ""))):
		msg += "; it seems to include the line-number prefixes Read shows (number and tab): leave them out"
	case strings.Contains(editNormalize(content), editNormalize(old)):
		msg += "; it matches when whitespace is ignored: check indentation (tabs or spaces), trailing spaces and line endings, and copy the text exactly as Read shows it"
	default:
		msg += "; Read the file again and copy the text exactly"
	}
	return msg
}

// editNormalize collapses each run of whitespace to one space.
func editNormalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// editSnippet shows the lines of s around [at, at+n) in cat -n style.
func editSnippet(s string, at, n int) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	first := strings.Count(s[:at], "\n")            // 0-based line of the start
	last := first + strings.Count(s[at:at+n], "\n") // 0-based line of the end
	if n > 0 && s[at+n-1] == '\n' && last > first {
		last--
	}
	from := max(first-editSnippetContext, 0)
	to := min(last+editSnippetContext, len(lines)-1)
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i >= first+editSnippetMax && i < last {
			fmt.Fprintf(&b, "   ...\t[%d more changed lines]\n", last-i)
			i = last - 1
			continue
		}
		b.WriteString(readFormatLine(i+1, []byte(lines[i]), len(lines[i])))
	}
	return strings.TrimSuffix(b.String(), "\n")
}
