package postgres

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

// killChildEnv makes the test binary the node TestKill9MidAppend kills:
// it appends from 8 goroutines to the sessions "a" and "b" of the database
// it names, printing each acknowledged seq, until it is killed.
const killChildEnv = "WEFT_PG_KILL_CHILD_DSN"

func init() {
	dsn := os.Getenv(killChildEnv)
	if dsn == "" {
		return
	}
	db, err := Open(context.Background(), dsn, Options{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	for w := range 8 {
		go func() {
			for i := 0; ; i++ {
				id := []string{"a", "b"}[(w+i)%2]
				out, err := db.AppendEvents(context.Background(), id, event.Event{Type: "x"}, event.Event{Type: "y"})
				if err != nil {
					fmt.Println("append:", err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Printf("ack %s %d\n", id, out[1].Seq)
				mu.Unlock()
			}
		}()
	}
	select {}
}

// TestKill9MidAppend: a node killed with SIGKILL while 8 of its writers
// append leaves every session's log gap-free, holding every seq it
// acknowledged, with LastSeq at the last stored event; another node then
// appends after it as if nothing happened.
func TestKill9MidAppend(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	db, err := Open(t.Context(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		if _, err := db.CreateSession(ctx, record.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	child := exec.Command(os.Args[0], "-test.run", "^$")
	child.Env = append(os.Environ(), killChildEnv+"="+dsn)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int64{}
	sc := bufio.NewScanner(stdout)
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "ack" {
			t.Fatalf("child: %s", sc.Text())
		}
		seq, _ := strconv.ParseInt(f[2], 10, 64)
		acked[f[1]] = max(acked[f[1]], seq)
		if n == 300 || time.Now().After(deadline) {
			if err := child.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "ack" {
			seq, _ := strconv.ParseInt(f[2], 10, 64)
			acked[f[1]] = max(acked[f[1]], seq)
		}
	}
	_ = child.Wait()
	if len(acked) == 0 {
		t.Fatal("the child acknowledged nothing")
	}
	// The killed node's connections may still be ending; PostgreSQL rolls
	// back what they had not committed.
	for _, id := range []string{"a", "b"} {
		evs, err := db.ReadEvents(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("%s: event %d has seq %d", id, i, e.Seq)
			}
		}
		if int64(len(evs)) < acked[id] {
			t.Errorf("%s: %d events stored, seq %d was acknowledged", id, len(evs), acked[id])
		}
		if len(evs)%2 != 0 {
			t.Errorf("%s: %d events stored: half an append survived", id, len(evs))
		}
		out, err := db.AppendEvents(ctx, id, event.Event{Type: "after"})
		if err != nil {
			t.Fatal(err)
		}
		if s, err := db.GetSession(ctx, id); err != nil || s.LastSeq != out[0].Seq || out[0].Seq < int64(len(evs))+1 {
			t.Errorf("%s: after the kill: append got seq %d, LastSeq %d (%v), %d events before", id, out[0].Seq, s.LastSeq, err, len(evs))
		}
	}
}
