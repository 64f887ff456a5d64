package secret

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Alphabets for generated test tokens. Fake secrets are generated rather
// than written out so that no token-shaped literal sits in the source,
// where other scanners (push protection) would trip over it.
const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	lownum  = "abcdefghijklmnopqrstuvwxyz0123456789"
	letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	hexl    = "0123456789abcdef"
	digits  = "0123456789"
	b32     = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b64     = alnum + "+/"
	urlsafe = alnum + "_-"
	bech32  = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
)

// gen makes deterministic random strings.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{rand.New(rand.NewPCG(seed, 99))} }

func (g *gen) s(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

func (g *gen) pem(kind string) string {
	var b strings.Builder
	b.WriteString("-----BEGIN " + kind + "-----\n")
	for range 4 {
		b.WriteString(g.s(b64, 64) + "\n")
	}
	b.WriteString(g.s(b64, 20) + "==\n-----END " + kind + "-----\n")
	return b.String()
}

type ruleCase struct {
	rule     string
	pos, neg string
}

func ruleCases() []ruleCase {
	g := newGen(1)
	uuid := g.s(hexl, 8) + "-" + g.s(hexl, 4) + "-" + g.s(hexl, 4) + "-" + g.s(hexl, 4) + "-" + g.s(hexl, 12)
	pw := g.s(alnum, 18)
	gcpPEM := strings.ReplaceAll(g.pem("PRIVATE KEY"), "\n", `\n`)
	return []ruleCase{
		{"aws-access-key-id", "key_id: " + "AKIA" + g.s(b32, 16), "key_id: AKIAIOSFODNN7EXAMPLE and AKIA" + g.s("abcdefgh", 16)},
		{"aws-secret-access-key", "aws_secret_access_key = " + g.s(b64, 40), "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"gcp-service-account-key", `{"type": "service_account", "private_key_id": "` + g.s(hexl, 40) + `", "private_key": "` + gcpPEM + `"}`, `{"type": "service_account", "private_key": ""}`},
		{"gcp-api-key", "apiKey: \"AIza" + g.s(urlsafe, 35) + "\"", "AIza" + g.s(urlsafe, 20)},
		{"google-oauth-client-secret", "GOCSPX-" + g.s(urlsafe, 28), "GOCSPX-" + g.s(urlsafe, 10)},
		{"google-oauth-access-token", "Bearer ya29." + g.s(urlsafe, 80), "ya29.short"},
		{"azure-storage-connection-string", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + g.s(b64, 86) + "==;EndpointSuffix=core.windows.net", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=<your-account-key>"},
		{"azure-ad-client-secret", `AZURE_CLIENT_SECRET="` + g.s(alnum, 3) + "8Q~" + g.s(alnum+"_~.-", 34) + `"`, `AZURE_CLIENT_SECRET="abc8Q~short"`},
		{"digitalocean-token", "dop_v1_" + g.s(hexl, 64), "dop_v1_" + g.s(hexl, 10)},
		{"heroku-api-key", "HEROKU_API_KEY=" + uuid, "request_id = " + uuid},
		{"heroku-api-key-v2", "HRKU-" + g.s(urlsafe, 60), "HRKU-" + g.s(urlsafe, 12)},
		{"github-pat", "ghp_" + g.s(alnum, 36), "ghp_" + g.s(alnum, 20)},
		{"github-oauth-token", "gho_" + g.s(alnum, 36), "gho_" + g.s(alnum, 20)},
		{"github-user-token", "ghu_" + g.s(alnum, 36), "ghu_" + g.s(alnum, 20)},
		{"github-server-token", "ghs_" + g.s(alnum, 36), "ghs_" + g.s(alnum, 20)},
		{"github-refresh-token", "ghr_" + g.s(alnum, 36), "ghr_" + g.s(alnum, 20)},
		{"github-fine-grained-pat", "github_pat_" + g.s(alnum+"_", 82), "github_pat_" + g.s(alnum, 30)},
		{"gitlab-pat", "glpat-" + g.s(urlsafe, 20), "glpat-short"},
		{"gitlab-runner-token", "glrt-" + g.s(urlsafe, 24), "glrt-abc"},
		{"gitlab-pipeline-trigger-token", "glptt-" + g.s(hexl, 40), "glptt-" + g.s(hexl, 10)},
		{"atlassian-api-token", "ATATT3" + g.s(urlsafe, 180), "ATATT3short"},
		{"linear-api-key", "lin_api_" + g.s(alnum, 40), "lin_api_" + g.s(alnum, 10)},
		{"postman-api-key", "PMAK-" + g.s(hexl, 24) + "-" + g.s(hexl, 34), "PMAK-123"},
		{"figma-token", "figd_" + g.s(urlsafe, 40), "figd_abc"},
		{"slack-bot-token", "xoxb-" + g.s(digits, 11) + "-" + g.s(digits, 12) + "-" + g.s(alnum, 24), "xoxb-123-abc"},
		{"slack-user-token", "xoxp-" + g.s(digits, 11) + "-" + g.s(digits, 11) + "-" + g.s(digits, 12) + "-" + g.s(alnum, 32), "xoxp-1-2-3-abc"},
		{"slack-legacy-token", "xoxa-2-" + g.s(alnum, 30), "xoxa-short"},
		{"slack-app-token", "xapp-1-A" + g.s(upnum, 10) + "-" + g.s(digits, 13) + "-" + g.s(lownum, 64), "xapp-1-abc"},
		{"slack-webhook", "https://hooks.slack.com/services/T" + g.s(upnum, 8) + "/B" + g.s(upnum, 10) + "/" + g.s(alnum, 24), "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"},
		{"discord-bot-token", "M" + g.s(alnum, 23) + "." + g.s(urlsafe, 6) + "." + g.s(urlsafe, 27), "M" + g.s(alnum, 10) + ".abc.def"},
		{"discord-webhook", "https://discord.com/api/webhooks/" + g.s(digits, 18) + "/" + g.s(urlsafe, 68), "https://discord.com/api/webhooks/123/abc"},
		{"telegram-bot-token", g.s(digits, 10) + ":AA" + g.s(urlsafe, 33), g.s(digits, 10) + ":AB" + g.s(urlsafe, 33)},
		{"twilio-api-key", "SK" + g.s(hexl, 32), "SK" + g.s(hexl, 16)},
		{"twilio-account-sid", "AC" + g.s(hexl, 32), "AC" + g.s(hexl, 31) + "g"},
		{"sendgrid-api-key", "SG." + g.s(urlsafe, 22) + "." + g.s(urlsafe, 43), "SG.abc.def"},
		{"mailgun-api-key", "MAILGUN_API_KEY=key-" + g.s(hexl, 32), `lookup := "key-` + g.s(hexl, 32) + `"`},
		{"mailchimp-api-key", g.s(hexl, 32) + "-us12", g.s(hexl, 32) + "-eu12"},
		{"stripe-secret-key", "sk_live_" + g.s(alnum, 24), "sk_test_" + g.s(alnum, 24)},
		{"stripe-restricted-key", "rk_live_" + g.s(alnum, 24), "rk_test_" + g.s(alnum, 24)},
		{"square-access-token", "EAAA" + g.s(urlsafe, 60), "EAAA" + g.s(urlsafe, 12)},
		{"square-oauth-secret", "sq0csp-" + g.s(urlsafe, 43), "sq0csp-" + g.s(urlsafe, 10)},
		{"paypal-braintree-token", "access_token$production$" + g.s(lownum, 16) + "$" + g.s(hexl, 32), "access_token$sandbox$" + g.s(lownum, 16) + "$" + g.s(hexl, 32)},
		{"shopify-access-token", "shpat_" + g.s(hexl, 32), "shpat_" + g.s(hexl, 10)},
		{"shopify-shared-secret", "shpss_" + g.s(hexl, 32), "shpss_" + g.s(hexl, 10)},
		{"anthropic-api-key", "sk-ant-api03-" + g.s(urlsafe, 93) + "AA", "sk-ant-short"},
		{"openai-api-key", "sk-" + g.s(alnum, 20) + "T3BlbkFJ" + g.s(alnum, 20), "sk-" + g.s(alnum, 10)},
		{"openai-project-key", "sk-proj-" + g.s(urlsafe, 60), "sk-proj-short"},
		{"openai-legacy-key", "sk-" + g.s(alnum, 48), "sk-" + g.s(alnum, 47) + "-x"},
		{"huggingface-token", "hf_" + g.s(letters, 34), "hf_" + g.s(letters, 10)},
		{"npm-token", "//registry.npmjs.org/:_authToken=npm_" + g.s(alnum, 36), "npm_install_packages"},
		{"pypi-token", "pypi-AgEIcHlwaS5vcmc" + g.s(urlsafe, 70), "pypi-AgEIcHlwaS5vcmc"},
		{"nuget-api-key", "oy2" + g.s(lownum, 43), "oy2" + g.s(lownum, 10)},
		{"rubygems-api-key", "rubygems_" + g.s(hexl, 48), "rubygems_version"},
		{"dockerhub-pat", "dckr_pat_" + g.s(urlsafe, 27), "dckr_pat_abc"},
		{"vault-token", "VAULT_TOKEN=hvs." + g.s(urlsafe, 90), "hvs.short"},
		{"terraform-cloud-token", g.s(alnum, 14) + ".atlasv1." + g.s(urlsafe, 67), "foo.atlasv1.bar"},
		{"doppler-token", "dp.pt." + g.s(alnum, 43), "dp.pt.short"},
		{"pulumi-token", "pul-" + g.s(hexl, 40), "pul-" + g.s(hexl, 10)},
		{"age-secret-key", "AGE-SECRET-KEY-1" + g.s(bech32, 58), "AGE-SECRET-KEY-1ABC"},
		{"datadog-api-key", "DD_API_KEY=" + g.s(hexl, 32), "DD_API_KEY=${DD_API_KEY}"},
		{"newrelic-user-api-key", "NRAK-" + g.s(upnum, 27), "NRAK-short"},
		{"newrelic-insert-key", "NRII-" + g.s(urlsafe, 32), "NRII-short"},
		{"sentry-dsn-secret", "https://" + g.s(hexl, 32) + ":" + g.s(hexl, 32) + "@o123.ingest.sentry.io/456", "https://" + g.s(hexl, 32) + "@o123.ingest.sentry.io/456"},
		{"sentry-auth-token", "sntrys_" + g.s(b64, 80), "sntrys_abc"},
		{"okta-api-token", "OKTA_API_TOKEN=00" + g.s(urlsafe, 40), "OKTA_ORG_URL=https://dev-123.okta.com"},
		{"notion-token", "secret_" + g.s(alnum, 43), "secret_sauce"},
		{"private-key-rsa", g.pem("RSA PRIVATE KEY"), `if strings.HasPrefix(s, "-----BEGIN RSA PRIVATE KEY-----") {`},
		{"private-key-ec", g.pem("EC PRIVATE KEY"), `const ecHeader = "-----BEGIN EC PRIVATE KEY-----"`},
		{"private-key-dsa", g.pem("DSA PRIVATE KEY"), "-----BEGIN DSA PRIVATE KEY-----\n<key here>\n-----END DSA PRIVATE KEY-----"},
		{"private-key-openssh", g.pem("OPENSSH PRIVATE KEY"), "ssh-keygen writes -----BEGIN OPENSSH PRIVATE KEY----- blocks"},
		{"private-key-pgp", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n" + g.s(b64, 64) + "\n" + g.s(b64, 64) + "\n=" + g.s(b64, 4) + "\n-----END PGP PRIVATE KEY BLOCK-----\n", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + g.s(b64, 64) + "\n-----END PGP PUBLIC KEY BLOCK-----"},
		{"private-key-pkcs8", g.pem("ENCRYPTED PRIVATE KEY"), g.pem("PUBLIC KEY")},
		{"jwt", "Authorization: Bearer eyJ" + g.s(urlsafe, 20) + ".eyJ" + g.s(urlsafe, 40) + "." + g.s(urlsafe, 43), "eyJhbGciOiJIUzI1NiJ9 is a JWT header"},
		{"postgres-url-password", "DATABASE_URL=postgres://app:" + pw + "@db.internal:5432/app", "postgres://postgres:postgres@localhost:5432/postgres"},
		{"mysql-url-password", "mysql://root:" + pw + "@localhost/db", "mysql://user:${DB_PASSWORD}@db/app"},
		{"mongodb-url-password", "mongodb+srv://svc:" + pw + "@cluster0.example.net/app", "mongodb://localhost:27017/test"},
		{"redis-url-password", "redis://:" + pw + "@cache:6379/0", "redis://localhost:6379"},
		{"amqp-url-password", "amqps://svc:" + pw + "@mq.internal/vhost", "amqp://guest:guest@localhost:5672/"},
		{"generic-secret-assignment", `db_password = "` + g.s(alnum, 24) + `"`, `db_password = "<your-db-password>"`},
	}
}

func TestBuiltinRules(t *testing.T) {
	t.Parallel()
	rules := BuiltinRules()
	if len(rules) < 45 {
		t.Fatalf("%d builtin rules, want at least 45", len(rules))
	}
	cases := ruleCases()
	byRule := map[string]ruleCase{}
	for _, c := range cases {
		byRule[c.rule] = c
	}
	for _, r := range rules {
		if _, ok := byRule[r.ID]; !ok {
			t.Errorf("rule %s has no test case", r.ID)
		}
		if r.Description == "" {
			t.Errorf("rule %s has no description", r.ID)
		}
		for _, k := range r.Keywords {
			if k != strings.ToLower(k) {
				t.Errorf("rule %s: keyword %q is not lowercase", r.ID, k)
			}
		}
	}
	g := NewDefaultGuard()
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			t.Parallel()
			if !slices.ContainsFunc(rules, func(r Rule) bool { return r.ID == c.rule }) {
				t.Fatalf("no rule %s", c.rule)
			}
			for _, pos := range []string{c.pos, "prefix line\n" + c.pos + "\nsuffix line"} {
				ms, err := g.Scan("config/app.env", pos)
				must(t, err)
				if len(ms) != 1 || ms[0].Rule != c.rule {
					t.Fatalf("positive %q: matches %+v, want one of %s", pos, ms, c.rule)
				}
				if red := g.Redact(pos); red == pos || !strings.Contains(red, "[REDACTED]") {
					t.Fatalf("Redact left %q", red)
				} else if ms, _ := g.Scan("x", red); len(ms) != 0 {
					t.Fatalf("redacted text still matches %+v: %q", ms, red)
				}
			}
			if ms, _ := g.Scan("x", "prefix line\n"+c.pos); ms[0].Line != 2 {
				t.Fatalf("line %d, want 2", ms[0].Line)
			}
			ms, err := g.Scan("config/app.env", c.neg)
			must(t, err)
			if len(ms) != 0 {
				t.Fatalf("negative %q: matches %+v", c.neg, ms)
			}
		})
	}
}

func TestBuiltinRulesFresh(t *testing.T) {
	t.Parallel()
	a := BuiltinRules()
	a[0].ID = "changed"
	a[0].Keywords[0] = "changed"
	b := BuiltinRules()
	if b[0].ID == "changed" || b[0].Keywords[0] == "changed" {
		t.Fatal("BuiltinRules shares its slice")
	}
	seen := map[string]bool{}
	for _, r := range b {
		if seen[r.ID] {
			t.Fatalf("duplicate rule id %s", r.ID)
		}
		seen[r.ID] = true
	}
}

// TestBuiltinTuningIsTransparent checks that the speed-ups of builtin rules
// (leading \b checked outside the pattern, keyword-line windows) find
// exactly what the plain patterns find.
func TestBuiltinTuningIsTransparent(t *testing.T) {
	t.Parallel()
	plain, err := CompileRules(builtinSpecs)
	must(t, err)
	for i := range plain {
		plain[i].identFilter = plain[i].ID == "generic-secret-assignment"
	}
	tuned := &DefaultGuard{Rules: BuiltinRules()}
	ref := &DefaultGuard{Rules: plain}
	var contents []string
	r := newGen(21)
	seps := []string{"\n", "x", "-"}
	cases := ruleCases()
	var all strings.Builder
	for _, c := range cases {
		for _, sep := range seps {
			contents = append(contents, sep+c.pos+sep, sep+c.neg+sep)
		}
		all.WriteString(c.pos + seps[r.r.IntN(len(seps))] + c.neg + seps[r.r.IntN(len(seps))])
	}
	contents = append(contents, all.String(), strings.ToUpper(all.String()), falsePositiveCorpus)
	for _, content := range contents {
		got, err := tuned.find(content)
		must(t, err)
		want, err := ref.find(content)
		must(t, err)
		if !slices.Equal(got, want) {
			t.Fatalf("tuned %+v, plain %+v for %q", got, want, content)
		}
	}
}
