package permission

// ReadChecker says what the Read(...) rules let a file tool that finds
// files itself (Grep, Glob) do with each file it finds. It resolves the
// rules' own paths once, so checking a file costs no system call.
type ReadChecker struct {
	e         *eval
	deny, ask []Rule
}

// NewReadChecker returns a checker for rs; c gives the workspace, the
// extra directories and the home directory (its tool and input are not
// used). Only path rules count: a rule about the whole tool (Read,
// Tool(Grep)) applied to the call itself before it ran.
func NewReadChecker(rs RuleSet, c Call) *ReadChecker {
	rc := &ReadChecker{e: newEval(Call{Tool: "Read", Workspace: c.Workspace, ExtraDirs: c.ExtraDirs, Home: c.Home})}
	for _, r := range rs.Deny {
		if r.kind == kindPath && r.head == "Read" {
			rc.deny = append(rc.deny, r)
		}
	}
	for _, r := range rs.Ask {
		if r.kind == kindPath && r.head == "Read" {
			rc.ask = append(rc.ask, r)
		}
	}
	return rc
}

// Verdict is Deny when a Read(...) deny rule covers p, Ask when a Read(...)
// ask rule does, else Allow. p is absolute and already resolved (a path
// that a walk under a resolved root found without following links, or the
// result of realpath.Resolve): it is matched as it is. A rule that cannot
// tell (a ~ rule without a home directory) counts as covering it.
func (rc *ReadChecker) Verdict(p string) Verdict {
	if rc == nil {
		return Allow
	}
	for _, l := range []struct {
		rules []Rule
		v     Verdict
	}{{rc.deny, Deny}, {rc.ask, Ask}} {
		for _, r := range l.rules {
			pats, ok := rc.e.patterns(r)
			if !ok || anyGlob(pats, p) {
				return l.v
			}
		}
	}
	return Allow
}

// ReadVerdict is NewReadChecker(rs, c).Verdict for one path, which need not
// be resolved: it is checked as given and as resolved, the stricter answer
// winning; a path that cannot be resolved is denied.
func ReadVerdict(rs RuleSet, c Call, p string) Verdict {
	rc := NewReadChecker(rs, c)
	abs, ok := rc.e.abs(p)
	if !ok {
		return Deny
	}
	real, ok := rc.e.resolve(abs)
	if !ok {
		return Deny
	}
	a, b := rc.Verdict(abs), rc.Verdict(real)
	switch {
	case a == Deny || b == Deny:
		return Deny
	case a == Ask || b == Ask:
		return Ask
	}
	return Allow
}
