package server

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/weft-run/weft/agent"
)

// Budgets over HTTP (issue 15). A request may bound what its turn or run
// spends; the server's default (weft serve --max-budget-usd) applies when
// it does not. A breach pauses the run with a budget_request event,
// answered on the permission endpoint like a permission_request:
//
//	POST /v1/sessions/{id}/permissions/{request_id}
//	{"allow": true, "max_budget_usd": 0.5}   continue, with a new limit
//	{"allow": false, "reason": "too dear"}     stop: done, stop_reason "budget"
//
// Without an answer before the permission timeout (or with nobody
// following the stream) the run stops.

// BudgetFields are the per-request limits of POST /v1/agent/run and
// POST /v1/sessions/{id}/messages (and runs): embedded in their bodies.
type BudgetFields struct {
	// MaxBudgetUSD bounds the turn's spend in US dollars at list prices;
	// absent means the server's default, 0 none.
	MaxBudgetUSD *float64 `json:"max_budget_usd,omitempty"`
	// MaxTokensTotal bounds all tokens of the turn's model calls;
	// absent means the server's default, 0 none.
	MaxTokensTotal *int `json:"max_tokens_total,omitempty"`
}

// Validate refuses limits that are not amounts.
func (b BudgetFields) Validate() error {
	if p := b.MaxBudgetUSD; p != nil && (*p < 0 || math.IsNaN(*p) || math.IsInf(*p, 0)) {
		return fmt.Errorf("max_budget_usd must be a non-negative number of dollars, got %v", *p)
	}
	if n := b.MaxTokensTotal; n != nil && *n < 0 {
		return fmt.Errorf("max_tokens_total must not be negative, got %d", *n)
	}
	return nil
}

// Budget is def (the server's default) with the request's limits in
// place of its own where the request set them.
func (b BudgetFields) Budget(def agent.Budget) agent.Budget {
	if b.MaxBudgetUSD != nil {
		def.MaxUSD = *b.MaxBudgetUSD
	}
	if b.MaxTokensTotal != nil {
		def.MaxTokens = *b.MaxTokensTotal
	}
	return def
}

// BudgetAnswer is the body that answers a budget_request on the
// permission endpoint.
type BudgetAnswer struct {
	Allow *bool `json:"allow"`
	// The new limits when allowed; absent or 0 keeps a limit as it is.
	MaxBudgetUSD   float64 `json:"max_budget_usd,omitempty"`
	MaxTokensTotal int     `json:"max_tokens_total,omitempty"`
	Reason         string  `json:"reason,omitempty"`
}

// Decision checks the answer's shape and turns it into the engine's, for
// the approval broker's answer payload (the session service returns it
// from agent.Config.ApproveBudget, with the request's id). A new limit
// below what was spent is not refused: the engine allows the call asked
// about either way, and asks again before the next.
func (a BudgetAnswer) Decision() (agent.BudgetDecision, error) {
	if a.Allow == nil {
		return agent.BudgetDecision{}, errors.New("allow is required (true or false)")
	}
	if !*a.Allow {
		return agent.BudgetDecision{Reason: nonEmpty(a.Reason, "declined over HTTP")}, nil
	}
	if a.MaxBudgetUSD < 0 || math.IsNaN(a.MaxBudgetUSD) || math.IsInf(a.MaxBudgetUSD, 0) || a.MaxTokensTotal < 0 {
		return agent.BudgetDecision{}, errors.New("max_budget_usd and max_tokens_total must be non-negative numbers")
	}
	return agent.BudgetDecision{Allow: true, MaxUSD: a.MaxBudgetUSD, MaxTokens: a.MaxTokensTotal, Reason: a.Reason}, nil
}

// approvalAnswer is a parsed answer to one of a session's or a run's
// questions (POST .../permissions/{request_id}): a permission request, a
// checkpoint, or a budget request, which alone takes new limits.
type approvalAnswer struct {
	requestID string
	allow     bool
	reason    string
	budget    *agent.BudgetDecision // set when the request is a budget_request
}

// decodeApprovalAnswer reads and checks the body of an answer. It writes
// the 400 itself and returns ok false when the body is wrong.
func decodeApprovalAnswer(w http.ResponseWriter, r *http.Request) (a approvalAnswer, ok bool) {
	var q BudgetAnswer
	if !decodeBody(w, r, &q) {
		return a, false
	}
	if q.Allow == nil {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "allow is required (true or false)")
		return a, false
	}
	a = approvalAnswer{requestID: r.PathValue("request_id"), allow: *q.Allow, reason: q.Reason}
	if !isBudgetRequest(a.requestID) {
		if q.MaxBudgetUSD != 0 || q.MaxTokensTotal != 0 {
			writeError(w, http.StatusBadRequest, errInvalidRequest, "max_budget_usd and max_tokens_total only answer a budget_request")
			return a, false
		}
		return a, true
	}
	d, err := q.Decision()
	if err != nil {
		writeError(w, http.StatusBadRequest, errInvalidRequest, err.Error())
		return a, false
	}
	a.budget = &d
	return a, true
}

// isBudgetRequest says whether a request id names a budget_request: the
// engine's ids are "budget_<hex>" (agent.BudgetRequest.ID), and no other
// question's id starts so.
func isBudgetRequest(id string) bool { return strings.HasPrefix(id, "budget_") }

func nonEmpty(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// deref is *p, or the zero value for an absent field.
func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}
