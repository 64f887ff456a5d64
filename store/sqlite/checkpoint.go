package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"
)

// checkpointer copies the WAL back into the database file off the commit
// path. SQLite's automatic checkpoint runs inside the commit that crosses
// its threshold, and under load that commit (a persist round of the event
// log, which readers wait for) stalled for 50-200 ms while thousands of
// pages were copied. Instead, every checkpointEvery, when some connection
// has committed since the last time (PRAGMA data_version), a connection of
// its own runs a PASSIVE checkpoint: it copies what it can without
// blocking the writer or readers, and the writer restarts the WAL from its
// beginning once everything in it is copied. A checkpoint that cannot run
// (busy) is simply tried at the next tick.
type checkpointer struct {
	db    *sql.DB
	every time.Duration
	quit  chan struct{}
	done  chan struct{}
	// restarts counts the passes that found the WAL shorter than the one
	// before (the writer had started it over), for tests.
	restarts atomic.Int64
	frames   int // the WAL's length at the last pass
}

func (db *DB) startCheckpointer(base string, busy, every time.Duration) error {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	c, err := sql.Open("sqlite", base+"?"+q.Encode())
	if err != nil {
		return err
	}
	c.SetMaxOpenConns(1)
	c.SetMaxIdleConns(1)
	c.SetConnMaxLifetime(0)
	c.SetConnMaxIdleTime(0)
	if err := c.Ping(); err != nil {
		c.Close()
		return err
	}
	db.ckpt = &checkpointer{db: c, every: every, quit: make(chan struct{}), done: make(chan struct{})}
	go db.ckpt.loop()
	return nil
}

func (c *checkpointer) loop() {
	defer close(c.done)
	t := time.NewTicker(c.every)
	defer t.Stop()
	var seen int64 = -1
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
		}
		ctx := context.Background()
		var v int64
		if err := c.db.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil || v == seen {
			continue
		}
		seen = v
		c.catchUp(ctx)
	}
}

// maxPasses bounds the checkpoint passes of one tick; restartFrames is
// the WAL length (in frames, about 32 MiB of pages) past which a tick ends
// with a RESTART checkpoint.
const (
	maxPasses     = 32
	restartFrames = 8192
)

// catchUp checkpoints while passes make progress. A pass copies the frames
// that were in the WAL when it started, up to the oldest snapshot a reader
// still uses; frames committed or pinned meanwhile are left for the next
// pass, each shorter than the last. The writer starts the WAL over only
// when it begins a transaction with every frame copied and no reader on
// the WAL, which under a steady load of writers and readers seldom
// happens by itself (the WAL grew to a GiB in a test). So once the WAL is
// past restartFrames, a RESTART checkpoint waits for the readers of the
// moment, holds the writer off while it copies the little the passes left
// and makes the next transaction start the WAL over: a stall of a few
// milliseconds at most once per tick, where SQLite's own checkpoint in the
// commit path stalled it for 50-200 ms.
func (c *checkpointer) catchUp(ctx context.Context) {
	prevLog, prevCopied := -1, -1
	for range maxPasses {
		var busy, logFrames, copied int
		if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &copied); err != nil || busy != 0 {
			return
		}
		if logFrames < c.frames {
			c.restarts.Add(1)
		}
		c.frames = logFrames
		if copied == logFrames && logFrames == prevLog {
			return // caught up, nothing new: the writer restarts the WAL when it can
		}
		if logFrames == prevLog && copied == prevCopied {
			break // no progress: a reader pins old frames
		}
		prevLog, prevCopied = logFrames, copied
		select {
		case <-c.quit:
			return
		default:
		}
	}
	if c.frames > restartFrames {
		var busy, logFrames, copied int
		_ = c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &logFrames, &copied)
	}
}

// stop ends the loop and closes the connection (Close's last checkpoint
// is the write connection's).
func (c *checkpointer) stop() {
	close(c.quit)
	<-c.done
	_ = c.db.Close()
}
