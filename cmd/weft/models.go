package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/llm"
)

func newModelsCmd(env environ) *cobra.Command {
	var provider string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the model catalogue: context windows, output limits, prices, capabilities",
		Long: `models lists weft's built-in model catalogue. Unknown models still work
("provider:any-model-name") with conservative defaults; prices are list prices
in USD per million tokens.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var list []llm.ModelInfo
			for _, m := range llm.DefaultCatalog().List() {
				if provider == "" || m.Provider == provider {
					list = append(list, m)
				}
			}
			if asJSON {
				enc := json.NewEncoder(env.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "MODEL\tCONTEXT\tMAX OUT\tIN $/M\tOUT $/M\tCACHE R/W $/M\tCAPABILITIES")
			for _, m := range list {
				fmt.Fprintf(tw, "%s:%s\t%d\t%d\t%.2f\t%.2f\t%.2f/%.2f\t%s\n", m.Provider, m.ID, m.ContextWindow, m.MaxOutputTokens,
					m.InputPrice, m.OutputPrice, m.CacheReadPrice, m.CacheWritePrice, capabilities(m))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "only this provider's models")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func capabilities(m llm.ModelInfo) string {
	var c []string
	for _, x := range []struct {
		on   bool
		name string
	}{{m.Tools, "tools"}, {m.Thinking, "thinking"}, {m.Images, "images"}, {m.Caching, "caching"}} {
		if x.on {
			c = append(c, x.name)
		}
	}
	return strings.Join(c, ",")
}
