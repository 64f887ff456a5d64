package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/prompt"
	"github.com/weft-run/weft/task"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
	"github.com/weft-run/weft/tool/mcp"
)

func newToolsCmd(env environ) *cobra.Command {
	var asJSON bool
	var mf mcpFlags
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools an agent can call (with their JSON Schemas under --json)",
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, _ := os.Getwd()
			// The tools of weft run and chat; nothing runs, so the task
			// registry closes with nothing to stop.
			tasks := task.NewRegistry(nil, task.Options{})
			defer tasks.Close(context.Background())
			pb := prompt.New(prompt.Config{Workspace: ws, Home: env.getenv("HOME"), Logger: slog.New(slog.DiscardHandler)})
			subs := subagentManager(env, ws, tasks, nil, slog.New(slog.DiscardHandler))
			reg, err := cliTools(builtin.Config{Workspace: ws}, tasks, append([]tool.Tool{pb.SkillTool()}, subs.Tools()...)...)
			if err != nil {
				return err
			}
			// The approved MCP servers' tools, as run and chat would have
			// them; a configuration problem is reported, not fatal here.
			sources, err := policy.LoadScopes(env.getenv("HOME"), ws, "")
			var st *mcpSetup
			if err == nil {
				st, err = loadMCP(env, ws, sources, mf)
			}
			if err == nil {
				var servers *mcp.Manager
				servers, err = mcpStart(env, st, reg, nil, nil, nil, nil, nil, slog.New(slog.DiscardHandler))
				if servers != nil {
					defer servers.Close()
				}
			}
			if err != nil {
				fmt.Fprintf(env.stderr, "weft: MCP servers not listed: %v\n", err)
			}
			specs := reg.Specs()
			if asJSON {
				enc := json.NewEncoder(env.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"tools": specs, "count": len(specs)})
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tEFFECT\tREAD-ONLY\tDESCRIPTION")
			for _, s := range specs {
				desc, _, _ := strings.Cut(s.Description, "\n")
				fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", s.Name, s.Effect, s.ReadOnly, clip(desc, 90))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tools with their input schemas as JSON")
	mf.register(cmd.Flags())
	return cmd
}
