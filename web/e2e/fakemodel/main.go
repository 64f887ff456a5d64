// Command fakemodel serves a scripted fake of the Anthropic Messages API
// (llmtest's loopback fake of the real wire protocol) for the web UI's
// end-to-end tests, with a control endpoint through which the test queues
// the responses: the model's every answer is scripted, so a run is
// deterministic.
//
//	fakemodel            prints {"model": URL, "control": URL} and serves
//	POST control/push    a JSON array of llmtest.Script, answered in order
//	GET  control/requests how many model requests arrived, and how many scripts wait
//
// It exits when its standard input closes (the test runner ended).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/weft-run/weft/llm/llmtest"
)

func main() {
	fake := llmtest.NewAnthropic(nil)
	defer fake.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var pending atomic.Int64 // scripts pushed so far
	mux := http.NewServeMux()
	mux.HandleFunc("POST /push", func(w http.ResponseWriter, r *http.Request) {
		var scripts []llmtest.Script
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&scripts); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fake.Push(scripts...)
		pending.Add(int64(len(scripts)))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, r *http.Request) {
		n := int64(len(fake.Requests()))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{"requests": n, "waiting": max(pending.Load()-n, 0)})
	})
	go func() { _ = http.Serve(ln, mux) }()
	out, _ := json.Marshal(map[string]string{"model": fake.URL, "control": "http://" + ln.Addr().String()})
	fmt.Println(string(out))
	_, _ = io.Copy(io.Discard, os.Stdin)
}
