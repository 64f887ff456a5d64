package observe

import (
	"maps"
	"sync"
)

// DenialTracker counts the policy's denials (seed 000's DenialTracker):
// an Observer of EventPermission that keeps totals by tool, by rule and
// by stage, and how many denials came in a row. Put it beside the
// observer you already have with NewComposite, and read Stats when you
// want a snapshot (a status panel, a summary at exit). Guardrail
// refusals are denials too (stage "guardrail").
type DenialTracker struct {
	mu          sync.Mutex
	total       int
	consecutive int
	byTool      map[string]int
	byRule      map[string]int
	byStage     map[string]int
}

// DenialStats is a snapshot of a DenialTracker.
type DenialStats struct {
	// Total denials, and how many of the latest decisions in a row were
	// denials.
	Total       int `json:"total"`
	Consecutive int `json:"consecutive"`
	// ByTool counts denials per tool name.
	ByTool map[string]int `json:"by_tool"`
	// ByRule counts denials per deciding rule: "stage:rule" when a rule
	// or hook decided (deny_rule:Bash(rm:*), guardrail:same_call_failures),
	// the stage alone otherwise (human, mode).
	ByRule map[string]int `json:"by_rule"`
	// ByStage counts denials per policy stage.
	ByStage map[string]int `json:"by_stage"`
}

// NewDenialTracker returns an empty tracker.
func NewDenialTracker() *DenialTracker {
	return &DenialTracker{byTool: map[string]int{}, byRule: map[string]int{}, byStage: map[string]int{}}
}

// Event counts EventPermission's denials; every other event is ignored.
func (d *DenialTracker) Event(name string, data map[string]any) {
	if name != EventPermission {
		return
	}
	verdict, _ := data["verdict"].(string)
	d.mu.Lock()
	defer d.mu.Unlock()
	if verdict != "deny" {
		d.consecutive = 0
		return
	}
	tool, _ := data["tool"].(string)
	stage, _ := data["stage"].(string)
	by, _ := data["by"].(string)
	rule := stage
	if by != "" {
		rule = stage + ":" + by
	}
	d.total++
	d.consecutive++
	d.byTool[tool]++
	d.byRule[rule]++
	d.byStage[stage]++
}

// Error ignores errors.
func (d *DenialTracker) Error(error, map[string]any) {}

// Stats returns a snapshot.
func (d *DenialTracker) Stats() DenialStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return DenialStats{Total: d.total, Consecutive: d.consecutive,
		ByTool: maps.Clone(d.byTool), ByRule: maps.Clone(d.byRule), ByStage: maps.Clone(d.byStage)}
}
