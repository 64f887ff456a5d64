package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchWorkspace is a workspace of n small source files in n/100
// directories, written an hour ago (a checkout, not files of this second),
// warmed as weft warms it when it starts.
func benchWorkspace(b *testing.B, n int) (*Workspace, string) {
	b.Helper()
	ws := b.TempDir()
	old := time.Now().Add(-time.Hour)
	for i := range n {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("f%05d.go", i))
		if err := os.WriteFile(p, fmt.Appendf(nil, "package p\n\n// file %d\nvar X%d = %d\n", i, i, i), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
	w, err := openStore(b, Options{}).Workspace(ws)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := w.Warm(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Logf("warming (the first snapshot) of %d files: %v", n, time.Since(start))
	return w, ws
}

// BenchmarkCheckpoint10k is the cost of one checkpoint of a 10,000-file
// workspace, warm, after one file changed: what a Write waits for before
// it runs ("snapshot"), and with the record of how the call left the
// workspace after it ran, the stage's whole cost per call ("call"); and
// with nothing changed since the turn's checkpoint ("unchanged").
//
//	go test -run '^$' -bench Checkpoint10k -benchtime 50x ./checkpoint/
func BenchmarkCheckpoint10k(b *testing.B) {
	w, ws := benchWorkspace(b, 10000)
	ctx := context.Background()
	turn := 0
	for _, settle := range []bool{false, true} {
		name := "snapshot"
		if settle {
			name = "call"
		}
		b.Run(name, func(b *testing.B) {
			defer reportCPU(b)()
			for i := range b.N {
				turn++
				p := filepath.Join(ws, fmt.Sprintf("pkg%03d", i%100), fmt.Sprintf("f%05d.go", (i%100)*100))
				if err := os.WriteFile(p, fmt.Appendf(nil, "package p\n// changed %d\n", turn), 0o644); err != nil {
					b.Fatal(err)
				}
				cp, err := w.Snapshot(ctx, Meta{Session: "bench", Turn: turn, Tool: "Write"})
				if err != nil {
					b.Fatal(err)
				}
				if cp.Reused {
					b.Fatal("a change was not checkpointed")
				}
				if settle {
					if err := w.Settle(ctx, "bench", cp.ID, ""); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	} // Nothing changed since the last checkpoint of the turn: what a
	// second Write of the same turn waits for before it runs.
	b.Run("unchanged", func(b *testing.B) {
		turn++
		if _, err := w.Snapshot(ctx, Meta{Session: "bench", Turn: turn, Tool: "Write"}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		defer reportCPU(b)()
		for range b.N {
			cp, err := w.Snapshot(ctx, Meta{Session: "bench", Turn: turn, Tool: "Write"})
			if err != nil {
				b.Fatal(err)
			}
			if !cp.Reused {
				b.Fatal("an unchanged workspace was checkpointed again")
			}
		}
	})
}

// reportCPU adds cpu-ms/op, the CPU time weft and its git processes used
// per iteration (cpuTime), to the benchmark's figures when the returned
// function runs.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}
