package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/weft-run/weft/agent"
)

// exitBudget is weft run's exit code when the run stopped on its budget
// (--max-budget-usd, --max-tokens-total) and nobody allowed more: not an
// error, not a success either, and a script can tell it apart.
const exitBudget = 3

// budgetFlags are the spend limits of weft run and chat.
type budgetFlags struct {
	maxUSD    float64
	maxTokens int
	// session makes the limits count the whole chat rather than each
	// run (weft chat sets it).
	session bool
}

func (b *budgetFlags) register(f *pflag.FlagSet) {
	f.Float64Var(&b.maxUSD, "max-budget-usd", 0, "stop before a model call would take spend past this many US dollars (list prices; chat: the whole chat) and ask to continue on a terminal (default: none, or $WEFT_MAX_BUDGET_USD)")
	f.IntVar(&b.maxTokens, "max-tokens-total", 0, "likewise for all tokens of the model calls, input, output and cache (default: none, or $WEFT_MAX_TOKENS_TOTAL)")
}

// apply sets cfg's budget, its approver (a terminal prompt when lines is
// a terminal and --yes was not given; else none, so a breach stops the
// run) and the usage ledger.
func (b *budgetFlags) apply(env environ, cfg *agent.Config, lines *lineReader, out io.Writer, yes bool) error {
	maxUSD, maxTokens := b.maxUSD, b.maxTokens
	if maxUSD == 0 {
		if v := env.getenv("WEFT_MAX_BUDGET_USD"); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("WEFT_MAX_BUDGET_USD %q: want a number of dollars", v)
			}
			maxUSD = f
		}
	}
	if maxTokens == 0 {
		if v := env.getenv("WEFT_MAX_TOKENS_TOTAL"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("WEFT_MAX_TOKENS_TOTAL %q: want a number of tokens", v)
			}
			maxTokens = n
		}
	}
	if maxUSD < 0 || maxTokens < 0 {
		return errors.New("--max-budget-usd and --max-tokens-total must not be negative")
	}
	cfg.Budget.MaxUSD, cfg.Budget.MaxTokens, cfg.Budget.Session = maxUSD, maxTokens, b.session
	if lines != nil && lines.terminal && !yes {
		cfg.ApproveBudget = (&budgetPrompt{lines: lines, out: out}).approve
	}
	return nil
}

// budgetPrompt is the person at the terminal answering a budget_request:
// a new limit, "y" for as much again, or no.
type budgetPrompt struct {
	lines *lineReader
	out   io.Writer
}

func (p *budgetPrompt) approve(ctx context.Context, req agent.BudgetRequest) agent.BudgetDecision {
	usd := req.MaxUSD > 0 && req.SpentUSD+req.EstimateUSD > req.MaxUSD
	unit, limit := "tokens", float64(req.MaxTokens)
	if usd {
		unit, limit = "USD", req.MaxUSD
	}
	for {
		// The renderer has shown the request's message (budget_request).
		fmt.Fprintf(p.out, "Continue? Enter a new limit in %s, [y]es for %s more, or [n]o to stop: ",
			unit, formatLimit(usd, limit))
		answer, err := p.lines.ReadLine(ctx)
		if err != nil || ctx.Err() != nil {
			return agent.BudgetDecision{Reason: "no answer to the budget prompt"}
		}
		answer = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(answer)), "$")
		var next float64
		switch answer {
		case "", "n", "no":
			return agent.BudgetDecision{Reason: "the user declined"}
		case "y", "yes":
			next = 2 * limit
		default:
			f, err := strconv.ParseFloat(answer, 64)
			if err != nil || f <= limit {
				fmt.Fprintf(p.out, "(want a number above the current limit, %s)", formatLimit(usd, limit))
				continue
			}
			next = f
		}
		if usd {
			return agent.BudgetDecision{Allow: true, MaxUSD: next}
		}
		return agent.BudgetDecision{Allow: true, MaxTokens: int(next)}
	}
}

func formatLimit(usd bool, v float64) string {
	if usd {
		return fmt.Sprintf("$%.4g", v)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// budgetLine is the text renderer's line for budget events.
func budgetLine(ev agent.Event) string {
	switch d := ev.Data.(type) {
	case agent.BudgetDecision:
		if d.Allow {
			lim := []string{}
			if d.MaxUSD > 0 {
				lim = append(lim, fmt.Sprintf("$%.4g", d.MaxUSD))
			}
			if d.MaxTokens > 0 {
				lim = append(lim, fmt.Sprintf("%d tokens", d.MaxTokens))
			}
			if len(lim) == 0 {
				return "budget: continuing"
			}
			return "budget: continuing with a limit of " + strings.Join(lim, " and ")
		}
		return "budget: stopped (" + d.Reason + ")"
	case agent.BudgetRequest:
		return "budget: " + d.Message
	case agent.CostThresholdData:
		return fmt.Sprintf("cost: this session has now cost more than $%g ($%.4f)", d.ThresholdUSD, d.CostUSD)
	}
	return ""
}

// newID is a random id for a CLI session or run in the usage ledger.
func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// budget keeps the run's budget events for --format json.
func (r *runResult) budget(ev agent.Event) {
	switch d := ev.Data.(type) {
	case agent.BudgetRequest:
		r.BudgetRequest, r.BudgetDecision = &d, nil
	case agent.BudgetDecision:
		r.BudgetDecision = &d
	}
}

// budgetError is what ends weft run when the run stopped on its budget.
func (r *runResult) budgetError() error {
	msg := "stopped on the budget"
	if r.BudgetRequest != nil {
		msg += ": " + r.BudgetRequest.Message
	}
	if r.BudgetDecision != nil && r.BudgetDecision.Reason != "" {
		msg += " (" + r.BudgetDecision.Reason + ")"
	}
	return errors.New(msg + "; raise --max-budget-usd or --max-tokens-total to go on")
}
