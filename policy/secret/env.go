package secret

import "strings"

// WeftVariable reports whether a variable of the server's own environment
// is one no process weft starts for the model may inherit: weft's own
// settings (WEFT_*, the bearer token and WEFT_<PROVIDER>_API_KEY among
// them) and model providers' credentials (*_API_KEY, and *_AUTH_TOKEN such
// as ANTHROPIC_AUTH_TOKEN). Names are compared without regard to case. The
// patterns cover every credential variable the model registry reads (a
// test holds them to llm/registry's list), and also other vendors' keys:
// a person who wants a tool to see one passes it through with --secret,
// which also redacts it.
func WeftVariable(name string) bool {
	n := strings.ToUpper(name)
	return strings.HasPrefix(n, "WEFT_") || strings.HasSuffix(n, "_API_KEY") || strings.HasSuffix(n, "_AUTH_TOKEN")
}

// ToolEnv is the environment of a process weft starts on the model's
// behalf (Bash commands, background process tasks): the one function every
// such launcher uses. It is, in order (later entries win):
//
//   - base, normally os.Environ(), without the variables [WeftVariable]
//     names;
//   - each of extra (the settings' env, variables of the call), as given;
//   - the secrets registered in s with Set, by their names.
//
// A variable anywhere in base or extra whose value holds a value of s
// registered with [Set.Withhold] (a key given by flag, say, and exported
// under some other name) is left out. User-configured hooks are the
// user's own code and keep the whole environment; they do not use this.
func ToolEnv(base []string, s *Set, extra ...[]string) []string {
	m := s.load()
	n := len(base) + len(m.passNames)
	for _, e := range extra {
		n += len(e)
	}
	env := make([]string, 0, n)
	for _, kv := range base {
		name, value, _ := strings.Cut(kv, "=")
		if WeftVariable(name) || m.holdsWithheld(value) {
			continue
		}
		env = append(env, kv)
	}
	for _, e := range extra {
		for _, kv := range e {
			if _, value, _ := strings.Cut(kv, "="); m.holdsWithheld(value) {
				continue
			}
			env = append(env, kv)
		}
	}
	return append(env, s.Env()...)
}

func (m *matcher) holdsWithheld(value string) bool {
	for _, w := range m.withheldValues {
		if strings.Contains(value, w) {
			return true
		}
	}
	return false
}
