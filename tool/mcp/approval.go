package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Approval is whether a server may start.
type Approval string

const (
	// Approved servers start: every server of the user and CLI scopes,
	// and project servers the person approved.
	Approved Approval = "approved"
	// Rejected project servers never start until approved again.
	Rejected Approval = "rejected"
	// Pending project servers have not been decided: weft asks on a
	// terminal and skips them elsewhere.
	Pending Approval = "pending"
)

// ProjectSettings are Claude Code's settings about project servers,
// gathered from the settings files. Enabling keys are honoured only from
// the user and CLI scopes: a repository's own settings must not approve
// the servers of the same repository. Disabling is honoured from any
// scope.
type ProjectSettings struct {
	EnableAll bool     // enableAllProjectMcpServers
	Enabled   []string // enabledMcpjsonServers
	Disabled  []string // disabledMcpjsonServers
}

// Decision is an approval and why.
type Decision struct {
	Approval Approval
	Reason   string
}

// Decide says whether s may start in workspace. store may be nil.
func Decide(s Server, workspace string, ps ProjectSettings, store *Approvals) Decision {
	if s.Scope != ScopeProject {
		return Decision{Approved, string(s.Scope) + " configuration"}
	}
	if slices.Contains(ps.Disabled, s.Name) {
		return Decision{Rejected, "listed in disabledMcpjsonServers"}
	}
	if ps.EnableAll {
		return Decision{Approved, "enableAllProjectMcpServers"}
	}
	if slices.Contains(ps.Enabled, s.Name) {
		return Decision{Approved, "listed in enabledMcpjsonServers"}
	}
	if store != nil {
		if rec, ok := store.Lookup(workspace, s); ok {
			if rec.Approved {
				return Decision{Approved, "approved on " + rec.At.Format("2006-01-02")}
			}
			return Decision{Rejected, "rejected on " + rec.At.Format("2006-01-02")}
		}
		if store.Changed(workspace, s) {
			return Decision{Pending, "its configuration changed since it was decided"}
		}
	}
	return Decision{Pending, "a project server not approved yet"}
}

// Approvals remembers decisions about project servers in a 0600 JSON file
// (~/.weft/mcp-approvals.json), keyed by the workspace's absolute path, the
// server's name and the hash of its configuration as written, so that a
// changed configuration is asked about again. Several weft processes may
// share the file: writes hold an exclusive lock and replace it atomically.
type Approvals struct {
	path string
}

// ApprovalsPath is the approvals file under home.
func ApprovalsPath(home string) string { return filepath.Join(home, ".weft", "mcp-approvals.json") }

// OpenApprovals returns the store at path (created on first write).
func OpenApprovals(path string) *Approvals { return &Approvals{path: path} }

// ApprovalRecord is one remembered decision.
type ApprovalRecord struct {
	Workspace string    `json:"workspace"`
	Server    string    `json:"server"`
	Hash      string    `json:"hash"`
	Approved  bool      `json:"approved"`
	At        time.Time `json:"at"`
}

type approvalsFile struct {
	Approvals []ApprovalRecord `json:"approvals"`
}

func (a *Approvals) read() (approvalsFile, error) {
	var f approvalsFile
	data, err := os.ReadFile(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("%s: %w", a.path, err)
	}
	return f, nil
}

// Lookup returns the decision recorded for s as configured now.
func (a *Approvals) Lookup(workspace string, s Server) (ApprovalRecord, bool) {
	f, err := a.read()
	if err != nil {
		return ApprovalRecord{}, false
	}
	ws := absPath(workspace)
	h := s.Hash()
	for _, r := range f.Approvals {
		if r.Workspace == ws && r.Server == s.Name && r.Hash == h {
			return r, true
		}
	}
	return ApprovalRecord{}, false
}

// Changed reports whether a decision exists for s under another hash.
func (a *Approvals) Changed(workspace string, s Server) bool {
	f, err := a.read()
	if err != nil {
		return false
	}
	ws := absPath(workspace)
	for _, r := range f.Approvals {
		if r.Workspace == ws && r.Server == s.Name {
			return true
		}
	}
	return false
}

// Set records a decision about s in workspace, replacing earlier ones for
// the same server there.
func (a *Approvals) Set(workspace string, s Server, approved bool) error {
	ws := absPath(workspace)
	return updateJSONFile(a.path, func(raw []byte) ([]byte, error) {
		var f approvalsFile
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &f); err != nil {
				return nil, fmt.Errorf("%s: %w", a.path, err)
			}
		}
		f.Approvals = slices.DeleteFunc(f.Approvals, func(r ApprovalRecord) bool {
			return r.Workspace == ws && r.Server == s.Name
		})
		f.Approvals = append(f.Approvals, ApprovalRecord{Workspace: ws, Server: s.Name, Hash: s.Hash(), Approved: approved, At: time.Now().UTC()})
		return json.MarshalIndent(f, "", "  ")
	})
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return p
}

// updateJSONFile rewrites path under an exclusive lock (path + ".lock"),
// with 0600 permissions in a 0700 directory, atomically (a temporary file
// renamed over it), so a crash mid-write leaves the old file and two
// processes cannot lose each other's updates.
func updateJSONFile(path string, update func(old []byte) ([]byte, error)) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	data, err := update(old)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
