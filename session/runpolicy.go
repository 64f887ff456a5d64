package session

import "github.com/weft-run/weft/policy"

// ServerPolicy returns a copy of the server-wide policy as it is now
// (including changes made through SetServerPermissions), for
// RunsConfig.Policy, so that runs follow the same posture as sessions.
func (rt *Service) ServerPolicy() *policy.Policy {
	rt.polMu.RLock()
	defer rt.polMu.RUnlock()
	p := *rt.base
	return &p
}
