package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/weft-run/weft/internal/realpath"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/tool"
)

const (
	readDefaultLimit = 2000
	readMaxLineLen   = 2000 // characters shown of one line
	readMaxImage     = 5 << 20
	readSniffLen     = 8192
	// readBudget keeps Read's text under its declared output cap, so the
	// framework's head-only cut never removes the "read on from" note.
	readBudget    = 60000
	readOutputCap = 64000
)

const readDescription = `Reads a file from the workspace. file_path may be absolute or relative to the workspace.

- Returns up to 2000 lines from the start by default; for long files pass offset (1-based line number to start at) and limit (number of lines).
- Lines are numbered like cat -n: the line number, a tab, then the line. The number and tab are not part of the file: leave them out of Edit's old_string. Lines longer than 2000 characters are truncated.
- Images (PNG, JPEG, GIF, WebP, up to 5 MB) are shown to you as images. Other binary files are refused.
- Reads files, not directories: list a directory with Glob or Bash ls.
- Read a file before you Edit or overwrite it.`

var readSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The path of the file to read, absolute or relative to the workspace"},
    "offset": {"type": "integer", "minimum": 0, "description": "The line number to start reading from (1-based). Only provide if the file is too large to read at once"},
    "limit": {"type": "integer", "minimum": 1, "description": "The number of lines to read (default 2000). Only provide if the file is too large to read at once"}
  },
  "required": ["file_path"],
  "additionalProperties": false
}`)

// readBinaryExt lists extensions refused without looking at the content
// (some of these formats start with a text-like header).
var readBinaryExt = map[string]bool{
	".exe": true, ".dll": true, ".so": true, ".dylib": true, ".o": true, ".a": true, ".lib": true,
	".obj": true, ".class": true, ".jar": true, ".war": true, ".pyc": true, ".pyo": true, ".wasm": true,
	".zip": true, ".tar": true, ".gz": true, ".tgz": true, ".bz2": true, ".xz": true, ".zst": true,
	".7z": true, ".rar": true, ".lz4": true, ".iso": true, ".dmg": true, ".deb": true, ".rpm": true,
	".pdf": true, ".doc": true, ".docx": true, ".xls": true, ".xlsx": true, ".ppt": true, ".pptx": true,
	".odt": true, ".ods": true, ".bmp": true, ".ico": true, ".tif": true, ".tiff": true, ".psd": true,
	".heic": true, ".avif": true, ".mp3": true, ".mp4": true, ".m4a": true, ".mov": true, ".avi": true,
	".mkv": true, ".webm": true, ".wav": true, ".flac": true, ".ogg": true, ".ttf": true, ".otf": true,
	".woff": true, ".woff2": true, ".eot": true, ".sqlite": true, ".sqlite3": true, ".db": true,
	".bin": true, ".dat": true, ".pb": true, ".onnx": true, ".pt": true, ".pth": true, ".safetensors": true,
	".parquet": true, ".avro": true, ".npy": true, ".npz": true, ".pkl": true,
}

var readImageTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
}

type readTool struct {
	ws wsConfine
}

// NewRead returns the Read tool: numbered lines of a text file, or an
// image, confined to the workspace.
func NewRead(cfg Config) tool.Tool { return &readTool{ws: wsFrom(cfg)} }

func (t *readTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "Read",
		Description: readDescription,
		InputSchema: readSchema,
		Meta: tool.Meta{
			ReadOnly:        true,
			ConcurrencySafe: true,
			Effect:          tool.EffectRead,
			Permission:      tool.ClassReadOnly,
			OutputCap:       readOutputCap,
		},
	}
}

type readInput struct {
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset"`
	Limit    int    `json:"limit"`
}

func (t *readTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in readInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("invalid input: %v", err), nil
	}
	path, err := t.ws.resolveChecked(ctx, in.FilePath)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	if !policy.ReadFilter(ctx, path)(path) {
		// The policy judged the path the model gave; this is where it leads
		// now, checked again at open time.
		return tool.Errorf("a Read permission rule denies reading %s", path), nil
	}
	f, err := realpath.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return tool.Errorf("%s", readMissing(ctx, t.ws, path)), nil
		}
		return tool.Errorf("cannot read %s: %v", path, err), nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return tool.Errorf("cannot read %s: %v", path, err), nil
	}
	if fi.IsDir() {
		return tool.Errorf("%s is a directory, not a file; list it with Glob (e.g. pattern \"*\") or Bash ls", path), nil
	}
	if !fi.Mode().IsRegular() {
		return tool.Errorf("%s is not a regular file", path), nil
	}
	sess := wsSession(call)

	head := make([]byte, readSniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return tool.Errorf("cannot read %s: %v", path, err), nil
	}
	head = head[:n]

	if mt := http.DetectContentType(head); readImageTypes[mt] {
		if fi.Size() > readMaxImage {
			return tool.Errorf("%s is an image of %d bytes; Read shows images up to %d bytes", path, fi.Size(), readMaxImage), nil
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return tool.Errorf("cannot read %s: %v", path, err), nil
		}
		data, err := io.ReadAll(f)
		if err != nil {
			return tool.Errorf("cannot read %s: %v", path, err), nil
		}
		sess.MarkRead(path, wsStamp(fi))
		return tool.Result{Content: []llm.Block{
			llm.Text(fmt.Sprintf("Image %s (%s, %d bytes)", path, mt, len(data))),
			llm.Image(mt, data),
		}}, nil
	}
	if readBinaryExt[strings.ToLower(filepath.Ext(path))] || readLooksBinary(head, n < readSniffLen) {
		return tool.Errorf("%s is a binary file (%d bytes); Read shows text files and images", path, fi.Size()), nil
	}
	if fi.Size() == 0 {
		sess.MarkRead(path, wsStamp(fi))
		return tool.Text(fmt.Sprintf("%s exists but is empty.", path)), nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return tool.Errorf("cannot read %s: %v", path, err), nil
	}

	offset := max(in.Offset, 1)
	limit := in.Limit
	if limit <= 0 {
		limit = readDefaultLimit
	}
	text, err := readLines(ctx, f, path, offset, limit)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	sess.MarkRead(path, wsStamp(fi))
	return tool.Text(text), nil
}

// readLooksBinary reports NUL bytes or invalid UTF-8 in the first bytes of
// a file. complete says whether head is the whole file; otherwise a
// multi-byte character cut at the end of head is not held against it.
func readLooksBinary(head []byte, complete bool) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if !complete {
		// Drop a possibly incomplete trailing rune (at most 3 bytes).
		for i := 0; i < 3 && len(head) > 0; i++ {
			r, size := utf8.DecodeLastRune(head)
			if r != utf8.RuneError || size != 1 {
				break
			}
			head = head[:len(head)-1]
		}
	}
	return !utf8.Valid(head)
}

// readLines renders lines [offset, offset+limit) in cat -n style, with a
// note on how many lines remain after the window.
func readLines(ctx context.Context, f io.Reader, path string, offset, limit int) (string, error) {
	br := bufio.NewReaderSize(f, 64*1024)
	var b strings.Builder
	lineNo, shown := 0, 0
	pastWindow, budgetHit := false, false
	for {
		if lineNo%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		line, full, err := readLineCapped(br, readMaxLineLen*utf8.UTFMax)
		if err != nil && err != io.EOF {
			return "", fmt.Errorf("cannot read %s: %v", path, err)
		}
		if line == nil {
			break
		}
		lineNo++
		if lineNo >= offset {
			if shown == limit {
				pastWindow = true
				break
			}
			entry := readFormatLine(lineNo, line, full)
			if b.Len()+len(entry) > readBudget && shown > 0 {
				pastWindow, budgetHit = true, true
				break
			}
			b.WriteString(entry)
			shown++
		}
		if err == io.EOF {
			break
		}
	}
	if shown == 0 {
		return "", fmt.Errorf("%s has %d lines; offset %d is past the end", path, lineNo, offset)
	}
	if pastWindow {
		rest, err := readCountRest(ctx, br)
		if err != nil {
			return "", fmt.Errorf("cannot read %s: %v", path, err)
		}
		why := ""
		if budgetHit {
			why = " (output size limit reached)"
		}
		next := offset + shown
		fmt.Fprintf(&b, "... %d more lines%s; use offset=%d to read on\n", 1+rest, why, next)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// readFormatLine renders one line as cat -n does: the number right-aligned
// in six columns, a tab, the line. full is the line's length on disk.
func readFormatLine(n int, line []byte, full int) string {
	s := strings.ToValidUTF8(string(bytes.TrimSuffix(line, []byte("\r"))), "\uFFFD")
	cut := full > len(line)
	if utf8.RuneCountInString(s) > readMaxLineLen {
		s = string([]rune(s)[:readMaxLineLen])
		cut = true
	}
	if cut {
		s += fmt.Sprintf(" ... [line truncated: %d bytes in total]", full)
	}
	return fmt.Sprintf("%6d\t%s\n", n, s)
}

// readLineCapped returns the next line without its newline, keeping at most
// max bytes of it; full is the line's real length. At the end of input it
// returns io.EOF, with the last unterminated line if there is one.
func readLineCapped(br *bufio.Reader, max int) (line []byte, full int, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		full += len(chunk)
		if room := max - len(line); room > 0 {
			line = append(line, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case err == nil:
			full--
			if len(line) > 0 && line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			}
			if line == nil {
				line = []byte{}
			}
			return line, full, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			if full == 0 {
				return nil, 0, io.EOF
			}
			if line == nil {
				line = []byte{}
			}
			return line, full, io.EOF
		default:
			return nil, 0, err
		}
	}
}

// readCountRest counts the lines left in br.
func readCountRest(ctx context.Context, br *bufio.Reader) (int, error) {
	buf := make([]byte, 64*1024)
	n := 0
	var last byte = '\n'
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		k, err := br.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if err == io.EOF {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// readMissing explains a missing file and, when the workspace holds files
// of the same name, suggests them.
func readMissing(ctx context.Context, ws wsConfine, path string) string {
	msg := fmt.Sprintf("File does not exist: %s", path)
	root, err := ws.dir()
	if err != nil {
		return msg
	}
	base := filepath.Base(path)
	// Names are shown too: a file the rules hide is not suggested.
	show := policy.ReadFilter(ctx, "")
	var found []string
	seen := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		seen++
		if seen > 20000 || len(found) >= 3 || ctx.Err() != nil {
			return fs.SkipAll
		}
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if d.Name() == base && p != path && d.Type().IsRegular() && show(p) {
			found = append(found, p)
		}
		return nil
	})
	if len(found) > 0 {
		msg += ". Did you mean " + strings.Join(found, " or ") + "?"
	}
	return msg
}
