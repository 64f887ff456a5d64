package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/record"
)

// The usage ledger is weft run's and weft chat's cost history:
// ~/.weft/usage.jsonl, one record.UsageRecord per model call, as a JSON
// line. It is a file of its own, not the server's database: SQLite allows
// one writer per file, which a weft serve may hold, and several CLI
// processes append at once. Each record is one write(2) on a descriptor
// opened O_APPEND, so concurrent appenders never interleave within a
// line; a process killed in the middle of a write leaves at most one
// partial line, which readers skip and the next writer terminates before
// appending (so it never glues a good record to it). The file is 0600: it
// names sessions and models.

// usageLedgerPath is ~/.weft/usage.jsonl; $WEFT_USAGE_LEDGER overrides
// it ("off" for none); "" (none) without a home.
func usageLedgerPath(env environ) string {
	if p := env.getenv("WEFT_USAGE_LEDGER"); p != "" {
		if p == "off" {
			return ""
		}
		return p
	}
	if home := env.getenv("HOME"); home != "" {
		return filepath.Join(home, ".weft", "usage.jsonl")
	}
	return ""
}

// usageLedger appends to the ledger. The file is opened at the first
// record, so a command that makes no model call leaves no file behind.
type usageLedger struct {
	path string
	log  *slog.Logger

	mu     sync.Mutex
	f      *os.File
	warned bool // a failure is logged once, and never fails a run
}

func newUsageLedger(path string, log *slog.Logger) *usageLedger {
	return &usageLedger{path: path, log: log}
}

// usageRunKey carries a run's id to OnUsage through the run's context.
type usageRunKey struct{}

// withUsageRun gives the run started with ctx an id of its own in the
// ledger.
func withUsageRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, usageRunKey{}, newID("run_"))
}

// onUsage is agent.Config.OnUsage for a session: nil when there is no
// ledger.
func (l *usageLedger) onUsage(sessionID string) func(context.Context, agent.CallUsage) {
	if l == nil || l.path == "" {
		return nil
	}
	return func(ctx context.Context, u agent.CallUsage) {
		runID, _ := ctx.Value(usageRunKey{}).(string)
		rec := record.UsageRecord{Time: u.Time.UTC(), SessionID: sessionID, RunID: runID, Provider: u.Provider, Model: u.Model,
			InputTokens: int64(u.Usage.InputTokens), OutputTokens: int64(u.Usage.OutputTokens),
			CacheReadTokens: int64(u.Usage.CacheReadTokens), CacheWriteTokens: int64(u.Usage.CacheWriteTokens), CostUSD: u.CostUSD}
		if err := l.append(rec); err != nil {
			l.mu.Lock()
			first := !l.warned
			l.warned = true
			l.mu.Unlock()
			if first {
				l.log.Warn("the usage ledger could not be written; weft cost will miss this command's calls", "path", l.path, "error", err)
			}
		}
	}
}

func (l *usageLedger) append(rec record.UsageRecord) error {
	if err := rec.Validate(); err != nil {
		return err
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		if err := l.open(); err != nil {
			return err
		}
	}
	_, err = l.f.Write(line)
	return err
}

// open opens the ledger for appending, tightening a file that others may
// read, and ends a partial last line left by a writer that was killed.
func (l *usageLedger) open() error {
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("%s is not a regular file", l.path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		_ = f.Chmod(0o600)
	}
	if st.Size() > 0 {
		last := make([]byte, 1)
		if r, err := os.Open(l.path); err == nil {
			_, rerr := r.ReadAt(last, st.Size()-1)
			r.Close()
			if rerr == nil && last[0] != '\n' {
				// Two writers doing this at once add an empty line,
				// which readers skip.
				if _, err := f.Write([]byte{'\n'}); err != nil {
					f.Close()
					return err
				}
			}
		}
	}
	l.f = f
	return nil
}

func (l *usageLedger) close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// maxLedgerLine bounds one line of the ledger; a longer one is not a
// record weft wrote, and is skipped.
const maxLedgerLine = 64 << 10

// readUsageLedger reads every record of the ledger; skipped counts the
// lines that are not a valid record (a partial line from a killed writer,
// an edit by hand). A missing ledger is empty.
func readUsageLedger(path string) (recs []record.UsageRecord, skipped int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := readLedgerLine(r)
		if len(line) > 0 {
			var rec record.UsageRecord
			if json.Unmarshal(line, &rec) != nil || rec.Validate() != nil || rec.Time.IsZero() {
				skipped++
			} else {
				recs = append(recs, rec)
			}
		}
		if err == io.EOF {
			return recs, skipped, nil
		}
		if err != nil {
			return recs, skipped, err
		}
	}
}

// readLedgerLine returns the next line without its newline; an over-long
// line comes back as one byte that is not JSON, so it counts as skipped.
func readLedgerLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(buf)+len(part) <= maxLedgerLine {
			buf = append(buf, part...)
		} else {
			buf = []byte{'!'}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(buf) > 0 && buf[len(buf)-1] == '\n' {
			buf = buf[:len(buf)-1]
		}
		return buf, err
	}
}
