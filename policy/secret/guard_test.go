package secret

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestGenericAssignments(t *testing.T) {
	t.Parallel()
	g := newGen(7)
	v := func() string { return g.s(alnum, 22) + "7Q" }
	tests := []struct {
		name, content string
		want          int
	}{
		{"go short assignment", `apiToken := "` + v() + `"`, 1},
		{"python", `SECRET_KEY = '` + v() + `'`, 1},
		{"js object", `const cfg = { clientSecret: "` + v() + `" }`, 1},
		{"json", `{"password": "` + v() + `"}`, 1},
		{"yaml quoted", "auth:\n  token: \"" + v() + "\"\n", 1},
		{"yaml unquoted", "db:\n  password: " + v() + "\n  host: db\n", 1},
		{"dotenv", "export API_KEY=" + v() + "\nDEBUG=1\n", 1},
		{"dotenv with comment", "ACCESS_KEY=" + v() + " # rotate monthly\n", 1},
		{"ruby hash", `:private_key => "` + v() + `"`, 1},
		{"two on two lines", "password=\"" + v() + "\"\ntoken=\"" + v() + "\"\n", 2},
		{"backticks", "secret = `" + v() + "`", 1},
		{"env lookup", `password := os.Getenv("DB_PASSWORD")`, 0},
		{"template", `token: ${{ secrets.GITHUB_TOKEN }}`, 0},
		{"helm", `password: {{ .Values.db.password | quote }}`, 0},
		{"shell variable", `TOKEN="$GITHUB_TOKEN_2024_ABCDEF"`, 0},
		{"placeholder", `api_key = "<your-api-key-here>"`, 0},
		{"changeme", `password: "changeme-please-2024"`, 0},
		{"xxxx", `token = "xxxxxxxxxxxxxxxxxxxxxxxx"`, 0},
		{"low entropy", `password = "aaaaaaaabbbbbbbb1111"`, 0},
		{"too short", `password = "Xk9#mQ2!"`, 0},
		{"no digit", `secret = "correct-horse-battery-staple"`, 0},
		{"sentence", `password: "must be at least 12 characters long"`, 0},
		{"constant name", `password = DEFAULT_PASSWORD_V2_2024`, 0},
		{"snake identifier", `token = refresh_token_2024_v2`, 0},
		{"function call", `token = generate_token(user_id, 2024)`, 0},
		{"attribute", `api_key = settings.API_KEY_V2_2024`, 0},
		{"url", `token_url = "https://oauth2.example.com/token/v2"`, 0},
		{"path", `private_key = "/etc/ssl/private/server-2024.key"`, 0},
		{"key not at end", `tokenizer_model = "bert-base-uncased-v2-2024"`, 0},
		{"comparison", `if token == "` + v() + `" {`, 0},
		{"type annotation", `password: str = Field(..., min_length=12)`, 0},
		{"struct tag", "Password string `json:\"password\" validate:\"min=12\"`", 0},
	}
	guard := NewDefaultGuard()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ms, err := guard.Scan("app/config.txt", tt.content)
			must(t, err)
			if len(ms) != tt.want {
				t.Fatalf("%q: %d matches %+v, want %d", tt.content, len(ms), ms, tt.want)
			}
		})
	}
}

// falsePositiveCorpus is ordinary project text that mentions passwords,
// tokens and keys without containing any.
const falsePositiveCorpus = `package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
)

// Config holds the settings; secrets come from the environment.
type Config struct {
	Password   string ` + "`json:\"password\"`" + `
	TokenURL   string ` + "`json:\"token_url\"`" + `
	APIKeyFile string ` + "`json:\"api_key_file\"`" + `
}

const tokenHeader = "Authorization"
const secretName = "database-password-secret"
const defaultTokenTTL = 3600

func Load() Config {
	password := os.Getenv("DB_PASSWORD")
	apiKey := os.Getenv("API_KEY")
	token, err := fetchToken(ctx, cfg.TokenURL)
	sum := sha256.Sum256([]byte(password + apiKey))
	fingerprint := hex.EncodeToString(sum[:])
	_ = fingerprint // e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
	return Config{Password: password, TokenURL: "https://auth.internal/oauth/token"}
}

func (c *Client) refreshToken(ctx context.Context) (string, error) {
	resp, err := c.http.PostForm(c.tokenURL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.refresh}})
	if token == "" || len(password) < 12 {
		return "", errors.New("password must be at least 12 characters")
	}
	key := fmt.Sprintf("session:%s:%d", userID, 1700000000)
	cacheKey := "user-profile-" + strconv.Itoa(id)
	return resp.Header.Get("X-Request-ID"), nil
}

// JavaScript
const token = localStorage.getItem("auth-token");
const apiKey = process.env.OPENAI_API_KEY;
fetch("/api/login", { method: "POST", body: JSON.stringify({ username, password }) });
export const secretKeyName = "STRIPE_SECRET_KEY";
const re = /^sk_(test|live)_[0-9a-zA-Z]{24,}$/;
const uuid = "123e4567-e89b-12d3-a456-426614174000";

# Python
import os
SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())
token = jwt.encode(payload, SECRET_KEY, algorithm="HS256")
api_key: str = Field(default="", description="Your API key")
def check_password(password: str, hashed: bytes) -> bool:
    return bcrypt.checkpw(password.encode(), hashed)

# YAML
services:
  db:
    image: postgres:16
    environment:
      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}
      DATABASE_URL: postgres://app:${DB_PASSWORD}@db:5432/app
  cache:
    image: redis:7-alpine
    command: redis-server --requirepass "$REDIS_PASSWORD"
env:
  - name: API_TOKEN
    valueFrom:
      secretKeyRef:
        name: api-credentials
        key: token
steps:
  - uses: actions/checkout@v4
    with:
      token: ${{ secrets.GITHUB_TOKEN }}
  - run: npm ci && npm test
integrity: sha512-Rdl0ZtGyMYnA3bbbCSZ5UoZp3NSNlI8NrXDDPBLKUMlsvtaBqzhYsjwO2SGnNm9dWprFDvDIGRAwvvtXIaFn4Q==
checksum: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
commit: 3f786850e387550fdab836ed7e6dc881de23001b

# README
## Configuration
Set ` + "`WEFT_API_KEY`" + ` to your key, or put it in ~/.weft/credentials (mode 0600).
Tokens expire after an hour; the client refreshes them with the refresh token.
To rotate the password, run ` + "`weft secrets rotate --name db-password`" + `.
Never commit secrets: use a secret manager such as Vault or Doppler.
Generate a key with ` + "`openssl genpkey -algorithm ed25519 -out key.pem`" + `.
The private key file starts with "-----BEGIN PRIVATE KEY-----".
Connect with postgres://user:password@localhost:5432/db in development.
Example: ` + "`curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com/v1/me`" + `
Session IDs look like sess_01HZX3K4Q8 and request IDs like req_7f3a9c.
| Setting | Default |
|---------|---------|
| token_ttl | 3600 |
| max_password_attempts | 5 |
Visit https://github.com/weft-run/weft/issues/5 for details.
go get github.com/bmatcuk/doublestar/v4@v4.10.4
github.com/google/go-cmp v0.7.0 h1:wk8382ETsv4JYUZwIsn6YpYiWiBsYLSJiTsyBybVuN8=
`

func TestNoFalsePositives(t *testing.T) {
	t.Parallel()
	ms, err := NewDefaultGuard().Scan("README.md", falsePositiveCorpus)
	must(t, err)
	for _, m := range ms {
		line := strings.Split(falsePositiveCorpus, "\n")[m.Line-1]
		t.Errorf("false positive %s on line %d: %s", m.Rule, m.Line, line)
	}
}

// TestNoFalsePositivesStdlib scans some of the Go standard library: plenty
// of code about tokens, keys and URLs, and no secrets.
func TestNoFalsePositivesStdlib(t *testing.T) {
	t.Parallel()
	guard := NewDefaultGuard()
	files := 0
	for _, pkg := range []string{"strings", "net/url", "os/exec", "log/slog"} {
		paths, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", pkg, "*.go"))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			files++
			ms, err := guard.Scan(p, string(b))
			must(t, err)
			for _, m := range ms {
				t.Errorf("false positive %s in %s:%d", m.Rule, p, m.Line)
			}
		}
	}
	if files == 0 {
		t.Skip("no Go sources under GOROOT")
	}
}

func TestExemptPaths(t *testing.T) {
	t.Parallel()
	secret := "token: ghp_" + newGen(3).s(alnum, 36)
	g := &DefaultGuard{ExemptPaths: []string{"testdata/", "/fixtures/", "**/*.pem", "docs/*.md", "local.env"}}
	tests := []struct {
		path   string
		exempt bool
	}{
		{"internal/x/testdata/token.txt", true},
		{"a/fixtures/b.json", true},
		{"fixtures/b.json", false}, // "/fixtures/" needs a parent directory
		{"certs/server.pem", true},
		{"server.pem", true},
		{"docs/guide.md", true},
		{"sub/docs/guide.md", true},
		{"docs/sub/guide.md", false},
		{"config/local.env", true},
		{"config/app.env", false},
		{`C:\work\testdata\x`, true}, // backslashes are slashes
		{"main.go", false},
	}
	for _, tt := range tests {
		ms, err := g.Scan(filepath.FromSlash(tt.path), secret)
		must(t, err)
		if got := len(ms) == 0; got != tt.exempt {
			t.Errorf("%s: exempt %v, want %v", tt.path, got, tt.exempt)
		}
	}
}

func TestCustomRules(t *testing.T) {
	t.Parallel()
	custom, err := CompileRules([]RuleSpec{
		{ID: "acme-key", Description: "ACME internal key", Pattern: `\b(acme_[a-z0-9]{20})\b`, Keywords: []string{"ACME_"}},
		{ID: "acme-pin", Pattern: `pin=(\d{6,})`, MinEntropy: 2},
	})
	must(t, err)
	if custom[0].Keywords[0] != "acme_" {
		t.Fatalf("keyword not lowercased: %q", custom[0].Keywords)
	}
	g := NewGuardWithRules(append(BuiltinRules(), custom...))
	key := "acme_" + newGen(5).s(lownum, 20)
	ms, err := g.Scan("a.txt", "x = "+key+"\npin=111222\npin=975318642\n")
	must(t, err)
	if len(ms) != 2 || ms[0].Rule != "acme-key" || ms[0].Line != 1 || ms[1].Rule != "acme-pin" || ms[1].Line != 3 {
		t.Fatalf("got %+v", ms)
	}
	// Keywords gate the pattern: without one, the regex is not tried.
	gated, err := CompileRules([]RuleSpec{{ID: "gated", Pattern: `secret\d+`, Keywords: []string{"unlock"}}})
	must(t, err)
	if ms, _ := NewGuardWithRules(gated).Scan("a", "secret123"); len(ms) != 0 {
		t.Fatalf("keyword gate ignored: %+v", ms)
	}
	if ms, _ := NewGuardWithRules(gated).Scan("a", "UNLOCK secret123"); len(ms) != 1 {
		t.Fatalf("keyword gate is case-sensitive: %+v", ms)
	}
	// An empty rule list means the builtin rules (seed 000's zero value).
	if ms, _ := (&DefaultGuard{}).Scan("a", "ghp_"+newGen(6).s(alnum, 36)); len(ms) != 1 {
		t.Fatal("zero DefaultGuard does not use the builtin rules")
	}
	if _, err := (&DefaultGuard{Rules: []Rule{{ID: "broken"}}}).Scan("a", "x"); err == nil || !strings.Contains(err.Error(), `"broken"`) {
		t.Fatalf("rule without pattern: %v", err)
	}
}

func TestCompileRulesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		specs []RuleSpec
		want  string
	}{
		{[]RuleSpec{{ID: "bad-re", Pattern: `(unclosed`}}, `secret rule "bad-re": invalid pattern`},
		{[]RuleSpec{{ID: "empty", Pattern: ``}}, `secret rule "empty": the pattern is empty`},
		{[]RuleSpec{{ID: "", Pattern: `x`}}, `secret rule #1: the id is empty`},
		{[]RuleSpec{{ID: "dup", Pattern: `x`}, {ID: "dup", Pattern: `y`}}, `secret rule "dup": duplicate id`},
		{[]RuleSpec{{ID: "neg", Pattern: `x`, MinEntropy: -1}}, `secret rule "neg": min_entropy -1 is outside 0..8`},
	}
	for _, tt := range tests {
		_, err := CompileRules(tt.specs)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("error %v, want prefix %q", err, tt.want)
		}
	}
}

func TestOverlapCountsOnce(t *testing.T) {
	t.Parallel()
	g := newGen(11)
	// A GitHub token assigned to a generic key is one secret, not two.
	content := `GITHUB_TOKEN="ghp_` + g.s(alnum, 36) + `"` + "\n" + `token: "` + g.s(alnum, 30) + `"`
	ms, err := NewDefaultGuard().Scan("a", content)
	must(t, err)
	if len(ms) != 2 || ms[0].Rule != "github-pat" || ms[1].Rule != "generic-secret-assignment" {
		t.Fatalf("got %+v", ms)
	}
	red := NewDefaultGuard().Redact(content)
	if red != "GITHUB_TOKEN=\"[REDACTED]\"\ntoken: \"[REDACTED]\"" {
		t.Fatalf("Redact: %q", red)
	}
}

func TestNoopGuard(t *testing.T) {
	t.Parallel()
	var g Guard = NoopGuard{}
	content := "ghp_" + newGen(2).s(alnum, 36)
	if ms, err := g.Scan("a", content); ms != nil || err != nil {
		t.Fatal("NoopGuard found something")
	}
	if g.Redact(content) != content {
		t.Fatal("NoopGuard redacted")
	}
}

func TestEntropy(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    string
		want float64
	}{{"", 0}, {"aaaa", 0}, {"ab", 1}, {"abcd", 2}, {"0123456789abcdef", 4}} {
		if got := Entropy(tt.s); got != tt.want {
			t.Errorf("Entropy(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func FuzzScan(f *testing.F) {
	for _, c := range ruleCases() {
		f.Add(c.pos)
		f.Add(c.neg)
	}
	f.Add(falsePositiveCorpus)
	f.Add("-----BEGIN RSA PRIVATE KEY-----\\n\\n")
	guard := NewDefaultGuard()
	f.Fuzz(func(t *testing.T, content string) {
		ms, err := guard.Scan("f.txt", content)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(content, "\n") + 1
		for _, m := range ms {
			if m.Line < 1 || m.Line > lines {
				t.Fatalf("line %d outside 1..%d", m.Line, lines)
			}
		}
		red := guard.Redact(content)
		if len(ms) == 0 && red != content {
			t.Fatal("Redact changed content without matches")
		}
	})
}
