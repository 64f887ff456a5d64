package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// The bare relay: the least a Go server can do to deliver the same fake
// deltas as (a), measured in the same run, so that weft's server CPU per
// delivered delta has a floor to be compared with. No store, no event
// log, no engine: a producer goroutine per turn stamps each delta (as the
// model fake does) and hands it over a channel to the request's goroutine,
// which writes one SSE frame per delta and flushes, as weft's stream does
// when a paced stream has one event ready at a time. The client code of
// (a) runs against it unchanged (relayPrefix + the same paths).

const relayPrefix = "/relay"

type relay struct {
	deltas   int
	interval time.Duration
	ids      atomic.Int64
}

func (rl *relay) register(mux *http.ServeMux, wrap func(http.Handler) http.Handler) {
	mux.HandleFunc("POST "+relayPrefix+"/v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"session_id":"relay_%d"}`, rl.ids.Add(1))
	})
	mux.Handle("POST "+relayPrefix+"/v1/sessions/{id}/messages", wrap(http.HandlerFunc(rl.turn)))
}

// turn streams one turn: user_message, the deltas, done.
func (rl *relay) turn(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Prompt string `json:"prompt"`
	}
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	deltas := make(chan string, 16)
	go func() {
		defer close(deltas)
		for k := range rl.deltas {
			if rl.interval > 0 && k > 0 {
				time.Sleep(rl.interval)
			}
			select {
			case deltas <- "t" + strconv.FormatInt(time.Now().UnixNano(), 10) + " ":
			case <-r.Context().Done():
				return
			}
		}
	}()
	seq := int64(1)
	buf := make([]byte, 0, 256)
	frame := func(typ string, data []byte) bool {
		buf = append(buf[:0], "id: "...)
		buf = strconv.AppendInt(buf, seq, 10)
		buf = append(buf, "\nevent: "...)
		buf = append(buf, typ...)
		buf = append(buf, "\ndata: "...)
		buf = append(buf, data...)
		buf = append(buf, "\n\n"...)
		seq++
		if _, err := w.Write(buf); err != nil {
			return false
		}
		if f != nil {
			f.Flush()
		}
		return true
	}
	msg, _ := json.Marshal(map[string]string{"text": q.Prompt})
	if !frame("user_message", msg) {
		return
	}
	for d := range deltas {
		data, _ := json.Marshal(map[string]string{"text": d})
		if !frame("text_delta", data) {
			return
		}
	}
	frame("done", []byte(`{"stop_reason":"end_turn"}`))
}
