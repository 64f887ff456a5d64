package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/weft-run/weft/app"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/store/memstore"
)

// "weft serve" inside a program of your own: an in-memory store, your
// model resolver (here a scripted fake), and the API mounted in your
// http.Server (or call Run / Serve to let the app listen).
func Example() {
	ctx := context.Background()
	st := memstore.New()
	defer st.Close() // a store you give stays yours to close
	a, err := app.New(ctx, app.Config{
		Store:        st,
		Models:       models{llmtest.NewScripted("scripted", llmtest.Text("hello"))},
		DefaultModel: "scripted:m",
		Workspace:    os.TempDir(),
	})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	defer a.Shutdown(ctx) // runs, turns, streams, hooks, in that order

	resp, err := http.Post(srv.URL+"/v1/sessions", "application/json", nil)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 201 Created
}
