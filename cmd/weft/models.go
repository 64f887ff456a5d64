package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/llm"
)

func newModelsCmd(env environ) *cobra.Command {
	var provider, modelsFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the model catalogue: context windows, output limits, prices, capabilities, and where each entry came from",
		Long: `models lists weft's model catalogue: the built-in table with the user's
models files applied (~/.weft/models.json, then --models or $WEFT_MODELS; the
format is in docs/models.md). SOURCE says where each entry came from:
"builtin", a file, or both ("builtin > FILE": a file changed a built-in
entry). Unknown models still work ("provider:any-model-name") with
conservative defaults; prices are list prices in USD per million tokens.`,
		Example: `  weft models --provider ollama
  weft models --models ./models.json
  weft models --json > models.json   # a starting point to edit`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := loadCatalog(env.getenv, modelsFile)
			if err != nil {
				return err
			}
			type entry struct {
				llm.ModelInfo
				Sources []string `json:"sources"`
			}
			var list []entry
			for _, m := range cat.List() {
				if provider == "" || m.Provider == provider {
					list = append(list, entry{m, cat.Sources(m.Provider, m.ID)})
				}
			}
			if asJSON {
				enc := json.NewEncoder(env.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			home := env.getenv("HOME")
			tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "MODEL\tCONTEXT\tMAX OUT\tIN $/M\tOUT $/M\tCACHE R/W $/M\tCAPABILITIES\tSOURCE")
			for _, e := range list {
				m := e.ModelInfo
				fmt.Fprintf(tw, "%s:%s\t%d\t%d\t%.2f\t%.2f\t%.2f/%.2f\t%s\t%s\n", m.Provider, m.ID, m.ContextWindow, m.MaxOutputTokens,
					m.InputPrice, m.OutputPrice, m.CacheReadPrice, m.CacheWritePrice, capabilities(m), sourceText(e.Sources, home))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "only this provider's models")
	cmd.Flags().StringVar(&modelsFile, "models", "", "models file applied over ~/.weft/models.json (default $WEFT_MODELS)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// sourceText shows an entry's sources, oldest first, with the home
// directory as ~.
func sourceText(sources []string, home string) string {
	if len(sources) == 0 {
		return "-"
	}
	out := make([]string, len(sources))
	for i, s := range sources {
		if home != "" && strings.HasPrefix(s, home+string(filepath.Separator)) {
			s = "~" + s[len(home):]
		}
		out[i] = s
	}
	return strings.Join(out, " > ")
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
