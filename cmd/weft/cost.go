package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/server"
)

// costReport is what weft cost shows (and prints with --format json).
type costReport struct {
	Source    string              `json:"source"` // the ledger's path, or the server's URL
	Last24h   record.UsageGroup   `json:"last_24h"`
	Last7d    record.UsageGroup   `json:"last_7d"`
	Total     record.UsageGroup   `json:"total"`
	ByModel   []record.UsageGroup `json:"by_model"`
	BySession []record.UsageGroup `json:"by_session"`
	// Skipped counts ledger lines that are not a record (a partial line
	// from a process killed mid-write).
	Skipped int `json:"skipped_lines,omitempty"`
}

// usageSource answers usage queries: the local ledger or a server.
type usageSource func(ctx context.Context, q record.UsageQuery) ([]record.UsageGroup, error)

func newCostCmd(env environ) *cobra.Command {
	var serverURL, token, format string
	var sessions int
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Show what model calls cost: the last 24 hours, 7 days and in total, by model and by session",
		Long: `cost sums the usage and cost of every model call (list prices of the model
catalogue). By default it reads the local ledger that weft run and weft chat
append to (~/.weft/usage.jsonl, or $WEFT_USAGE_LEDGER); with --server it asks a
weft serve (GET /v1/usage) for the calls of its sessions and runs.`,
		Example: `  weft cost
  weft cost --format json | jq .by_model
  weft cost --server http://127.0.0.1:8080 --token "$WEFT_BEARER_TOKEN"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "text" && format != "json" {
				return fmt.Errorf("--format %q: want text or json", format)
			}
			var rep costReport
			var src usageSource
			if serverURL != "" {
				if token == "" {
					token = env.getenv("WEFT_BEARER_TOKEN")
				}
				u, err := url.Parse(serverURL)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return fmt.Errorf("--server %q: want http(s)://host:port", serverURL)
				}
				rep.Source = serverURL
				src = serverUsage(u, token)
			} else {
				path := usageLedgerPath(env)
				if path == "" {
					return errors.New("no usage ledger: HOME is not set and neither is $WEFT_USAGE_LEDGER")
				}
				recs, skipped, err := readUsageLedger(path)
				if err != nil {
					return fmt.Errorf("reading the usage ledger: %w", err)
				}
				rep.Source, rep.Skipped = path, skipped
				src = func(_ context.Context, q record.UsageQuery) ([]record.UsageGroup, error) {
					return record.GroupUsage(recs, q)
				}
			}
			if err := rep.fill(cmd.Context(), src, time.Now()); err != nil {
				return err
			}
			if format == "json" {
				enc := json.NewEncoder(env.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			rep.print(env.stdout, sessions)
			return nil
		},
	}
	cmd.Flags().StringVar(&serverURL, "server", "", "ask this weft serve (GET /v1/usage) instead of reading the local ledger")
	cmd.Flags().StringVar(&token, "token", "", "the server's bearer token (default $WEFT_BEARER_TOKEN)")
	cmd.Flags().StringVar(&format, "format", "text", "output: text | json")
	cmd.Flags().IntVar(&sessions, "sessions", 10, "how many of the most expensive sessions to list (text format)")
	return cmd
}

// fill asks src for the three windows and the two breakdowns.
func (rep *costReport) fill(ctx context.Context, src usageSource, now time.Time) error {
	total := func(since time.Time, into *record.UsageGroup) error {
		g, err := src(ctx, record.UsageQuery{Since: since})
		if err != nil {
			return err
		}
		if len(g) == 1 {
			*into = g[0]
		}
		return nil
	}
	if err := total(now.Add(-24*time.Hour), &rep.Last24h); err != nil {
		return err
	}
	if err := total(now.Add(-7*24*time.Hour), &rep.Last7d); err != nil {
		return err
	}
	if err := total(time.Time{}, &rep.Total); err != nil {
		return err
	}
	var err error
	if rep.ByModel, err = src(ctx, record.UsageQuery{GroupBy: record.UsageByModel}); err != nil {
		return err
	}
	if rep.BySession, err = src(ctx, record.UsageQuery{GroupBy: record.UsageBySession}); err != nil {
		return err
	}
	// Most expensive first.
	byCost := func(a, b record.UsageGroup) int {
		if a.CostUSD != b.CostUSD {
			if a.CostUSD > b.CostUSD {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	}
	slices.SortStableFunc(rep.ByModel, byCost)
	slices.SortStableFunc(rep.BySession, byCost)
	return nil
}

func (rep *costReport) print(w io.Writer, sessions int) {
	fmt.Fprintf(w, "Usage from %s\n", rep.Source)
	if rep.Skipped > 0 {
		fmt.Fprintf(w, "(%d lines of the ledger are not records and were skipped)\n", rep.Skipped)
	}
	row := func(label string, g record.UsageGroup) {
		fmt.Fprintf(w, "  %-28s %6d calls %10d in %9d out %10d cache r %9d cache w  $%.4f\n",
			clip(label, 28), g.Calls, g.InputTokens, g.OutputTokens, g.CacheReadTokens, g.CacheWriteTokens, g.CostUSD)
	}
	row("last 24 hours", rep.Last24h)
	row("last 7 days", rep.Last7d)
	row("total", rep.Total)
	if len(rep.ByModel) > 0 {
		fmt.Fprintln(w, "By model:")
		for _, g := range rep.ByModel {
			row(g.Key, g)
		}
	}
	if len(rep.BySession) > 0 {
		fmt.Fprintln(w, "By session (most expensive first):")
		for i, g := range rep.BySession {
			if i == sessions {
				fmt.Fprintf(w, "  ... and %d more (--sessions N, or --format json)\n", len(rep.BySession)-sessions)
				break
			}
			key := g.Key
			if key == "" {
				key = "(no session)"
			}
			row(key, g)
		}
	}
}

// serverUsage queries a weft serve's GET /v1/usage.
func serverUsage(base *url.URL, token string) usageSource {
	client := &http.Client{Timeout: 30 * time.Second}
	return func(ctx context.Context, q record.UsageQuery) ([]record.UsageGroup, error) {
		u := base.JoinPath("/v1/usage")
		v := url.Values{}
		if !q.Since.IsZero() {
			v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
		}
		if q.GroupBy != "" {
			v.Set("group_by", q.GroupBy)
		}
		u.RawQuery = v.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			var e struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			_ = json.Unmarshal(body, &e)
			msg := e.Error.Message
			if msg == "" {
				msg = strings.TrimSpace(clip(string(body), 200))
			}
			return nil, fmt.Errorf("%s: %s: %s", u.Redacted(), resp.Status, msg)
		}
		var out server.UsageResponse
		if err := json.Unmarshal(body, &out); err != nil {
			return nil, fmt.Errorf("%s: the answer is not a usage response: %w", u.Redacted(), err)
		}
		if out.Groups == nil {
			out.Groups = []record.UsageGroup{}
		}
		return out.Groups, nil
	}
}
