package secret

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Pattern fragments shared by the builtin rules.
const (
	// assign is the gap between a key and its value: an optional closing
	// quote, then =, :=, : or => with spaces, then an optional opening quote.
	assign = `["'\x60]?[ \t]*(?::=|=>|=|:)[ \t]*["'\x60]?`
	// tokEnd ends a token whose alphabet includes '-' and '_' (where \b
	// would not be a boundary).
	tokEnd = `(?:[^A-Za-z0-9_\-]|$)`
	// pemBody is the rest of a PEM block after its BEGIN line: optional
	// headers (Proc-Type, Version...), then base64 (lines may be joined by
	// escaped newlines inside JSON or code), then the END line if present.
	pemBody = `(?:\s|\\[nr])*(?:[A-Za-z][A-Za-z0-9-]*: [^\n\\]*(?:\n|\\n)(?:\s|\\[nr])*)*[A-Za-z0-9+/]{40,}[A-Za-z0-9+/=\s\\]*`
	// dbURL is a database URL's credentials: an optional user, then the
	// password (the secret), then '@'.
	dbURL = `://[^:@/\s"'\x60]*:([^@/\s"'\x60]+)@[^\s"'\x60/]+`
)

// builtinSpecs are ordered most specific first: where findings overlap,
// the earlier rule's wins, so the generic assignment rules come last.
var builtinSpecs = []RuleSpec{
	// Cloud providers.
	{ID: "aws-access-key-id", Description: "AWS access key ID", Pattern: `\b((?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b`, Keywords: []string{"akia", "asia", "abia", "acca"}},
	{ID: "aws-secret-access-key", Description: "AWS secret access key in an assignment", Pattern: `(?i)aws[\w.\-]{0,30}?(?:secret|private)[\w.\-]{0,20}` + assign + `([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`, Keywords: []string{"aws"}, MinEntropy: 3.5},
	{ID: "gcp-service-account-key", Description: "GCP service account JSON private key", Pattern: `"private_key"\s*:\s*"(-----BEGIN[A-Z ]*PRIVATE KEY-----(?:\\n|\\r)+[A-Za-z0-9+/=]{40,}[^"]*)"`, Keywords: []string{"private_key"}},
	{ID: "gcp-api-key", Description: "Google Cloud API key", Pattern: `\b(AIza[0-9A-Za-z_\-]{35})` + tokEnd, Keywords: []string{"aiza"}},
	{ID: "google-oauth-client-secret", Description: "Google OAuth client secret", Pattern: `\b(GOCSPX-[A-Za-z0-9_\-]{28})` + tokEnd, Keywords: []string{"gocspx-"}},
	{ID: "google-oauth-access-token", Description: "Google OAuth access token", Pattern: `\b(ya29\.[0-9A-Za-z_\-]{30,})`, Keywords: []string{"ya29."}},
	{ID: "azure-storage-connection-string", Description: "Azure storage account key in a connection string", Pattern: `(?i)AccountKey=([A-Za-z0-9+/]{86}==)`, Keywords: []string{"accountkey="}},
	{ID: "azure-ad-client-secret", Description: "Azure AD (Entra ID) client secret", Pattern: `(?:^|[\\'"\x60\s>=:(,)])([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34})(?:$|[\\'"\x60\s<),])`, Keywords: []string{"q~"}},
	{ID: "digitalocean-token", Description: "DigitalOcean token", Pattern: `\b(do[opr]_v1_[a-f0-9]{64})\b`, Keywords: []string{"dop_v1_", "doo_v1_", "dor_v1_"}},
	{ID: "heroku-api-key", Description: "Heroku API key in an assignment", Pattern: `(?i)heroku[\w.\-]{0,30}` + assign + `([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b`, Keywords: []string{"heroku"}},
	{ID: "heroku-api-key-v2", Description: "Heroku API key", Pattern: `\b(HRKU-[A-Za-z0-9_\-]{60})` + tokEnd, Keywords: []string{"hrku-"}},

	// Source hosting and CI.
	{ID: "github-pat", Description: "GitHub personal access token", Pattern: `\b(ghp_[A-Za-z0-9]{36})\b`, Keywords: []string{"ghp_"}},
	{ID: "github-oauth-token", Description: "GitHub OAuth access token", Pattern: `\b(gho_[A-Za-z0-9]{36})\b`, Keywords: []string{"gho_"}},
	{ID: "github-user-token", Description: "GitHub user-to-server token", Pattern: `\b(ghu_[A-Za-z0-9]{36})\b`, Keywords: []string{"ghu_"}},
	{ID: "github-server-token", Description: "GitHub server-to-server token", Pattern: `\b(ghs_[A-Za-z0-9]{36})\b`, Keywords: []string{"ghs_"}},
	{ID: "github-refresh-token", Description: "GitHub refresh token", Pattern: `\b(ghr_[A-Za-z0-9]{36})\b`, Keywords: []string{"ghr_"}},
	{ID: "github-fine-grained-pat", Description: "GitHub fine-grained personal access token", Pattern: `\b(github_pat_[A-Za-z0-9_]{82})\b`, Keywords: []string{"github_pat_"}},
	{ID: "gitlab-pat", Description: "GitLab personal access token", Pattern: `\b(glpat-[A-Za-z0-9_\-]{20,})`, Keywords: []string{"glpat-"}},
	{ID: "gitlab-runner-token", Description: "GitLab runner authentication token", Pattern: `\b(glrt-[A-Za-z0-9_\-]{20,})`, Keywords: []string{"glrt-"}},
	{ID: "gitlab-pipeline-trigger-token", Description: "GitLab pipeline trigger token", Pattern: `\b(glptt-[a-f0-9]{40})\b`, Keywords: []string{"glptt-"}},
	{ID: "atlassian-api-token", Description: "Atlassian API token", Pattern: `\b(ATATT3[A-Za-z0-9_\-=]{100,})`, Keywords: []string{"atatt3"}},
	{ID: "linear-api-key", Description: "Linear API key", Pattern: `\b(lin_api_[A-Za-z0-9]{40})\b`, Keywords: []string{"lin_api_"}},
	{ID: "postman-api-key", Description: "Postman API key", Pattern: `\b(PMAK-[a-f0-9]{24}-[a-f0-9]{34})\b`, Keywords: []string{"pmak-"}},
	{ID: "figma-token", Description: "Figma access token", Pattern: `\b(fig[dou]_[A-Za-z0-9_\-]{40,})`, Keywords: []string{"figd_", "figo_", "figu_"}},

	// Messaging.
	{ID: "slack-bot-token", Description: "Slack bot token", Pattern: `\b(xoxb-\d{10,13}-\d{10,13}-[A-Za-z0-9]{24,34})\b`, Keywords: []string{"xoxb-"}},
	{ID: "slack-user-token", Description: "Slack user token", Pattern: `\b(xox[pe]-\d{10,13}-\d{10,13}-\d{10,13}-[A-Za-z0-9]{28,34})\b`, Keywords: []string{"xoxp-", "xoxe-"}},
	{ID: "slack-legacy-token", Description: "Slack app or legacy workspace token", Pattern: `\b(xox[ar]-(?:\d-)?[0-9A-Za-z][0-9A-Za-z\-]{19,})`, Keywords: []string{"xoxa-", "xoxr-"}},
	{ID: "slack-app-token", Description: "Slack app-level token", Pattern: `\b(xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{64})\b`, Keywords: []string{"xapp-"}},
	{ID: "slack-webhook", Description: "Slack incoming webhook URL", Pattern: `(hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56})`, Keywords: []string{"hooks.slack.com"}},
	{ID: "discord-bot-token", Description: "Discord bot token", Pattern: `\b([MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38})` + tokEnd},
	{ID: "discord-webhook", Description: "Discord webhook URL", Pattern: `(discord(?:app)?\.com/api/webhooks/\d{17,20}/[A-Za-z0-9_\-]{60,68})`, Keywords: []string{"discord"}},
	{ID: "telegram-bot-token", Description: "Telegram bot token", Pattern: `\b(\d{8,10}:AA[A-Za-z0-9_\-]{33})` + tokEnd, Keywords: []string{":aa"}},
	{ID: "twilio-api-key", Description: "Twilio API key SID", Pattern: `\b(SK[0-9a-fA-F]{32})\b`, Keywords: []string{"sk"}},
	{ID: "twilio-account-sid", Description: "Twilio account SID", Pattern: `\b(AC[0-9a-f]{32})\b`, Keywords: []string{"ac"}},
	{ID: "sendgrid-api-key", Description: "SendGrid API key", Pattern: `\b(SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})` + tokEnd, Keywords: []string{"sg."}},
	{ID: "mailgun-api-key", Description: "Mailgun API key", Pattern: `(?i)mailgun[^\n]{0,40}?\b(key-[0-9a-f]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})\b`, Keywords: []string{"mailgun"}},
	{ID: "mailchimp-api-key", Description: "Mailchimp API key", Pattern: `\b([0-9a-f]{32}-us\d{1,2})\b`, Keywords: []string{"-us"}},

	// Payments and commerce.
	{ID: "stripe-secret-key", Description: "Stripe live secret key", Pattern: `\b(sk_live_[0-9A-Za-z]{24,})`, Keywords: []string{"sk_live_"}},
	{ID: "stripe-restricted-key", Description: "Stripe live restricted key", Pattern: `\b(rk_live_[0-9A-Za-z]{24,})`, Keywords: []string{"rk_live_"}},
	{ID: "square-access-token", Description: "Square access token", Pattern: `\b(EAAA[A-Za-z0-9_\-]{60}|sq0atp-[0-9A-Za-z_\-]{22})` + tokEnd, Keywords: []string{"eaaa", "sq0atp-"}},
	{ID: "square-oauth-secret", Description: "Square OAuth secret", Pattern: `\b(sq0csp-[0-9A-Za-z_\-]{43})` + tokEnd, Keywords: []string{"sq0csp-"}},
	{ID: "paypal-braintree-token", Description: "PayPal Braintree access token", Pattern: `(access_token\$production\$[0-9a-z]{16}\$[0-9a-f]{32})`, Keywords: []string{"access_token$production$"}},
	{ID: "shopify-access-token", Description: "Shopify access token", Pattern: `\b(shp(?:at|ca|pa)_[a-fA-F0-9]{32})\b`, Keywords: []string{"shpat_", "shpca_", "shppa_"}},
	{ID: "shopify-shared-secret", Description: "Shopify shared secret", Pattern: `\b(shpss_[a-fA-F0-9]{32})\b`, Keywords: []string{"shpss_"}},

	// AI providers.
	{ID: "anthropic-api-key", Description: "Anthropic API key", Pattern: `\b(sk-ant-[a-z]+\d{0,2}-[A-Za-z0-9_\-]{40,})`, Keywords: []string{"sk-ant-"}},
	{ID: "openai-api-key", Description: "OpenAI API key", Pattern: `\b(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,})`, Keywords: []string{"t3blbkfj"}},
	{ID: "openai-project-key", Description: "OpenAI project or service account key", Pattern: `\b(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,})`, Keywords: []string{"sk-proj-", "sk-svcacct-", "sk-admin-"}},
	{ID: "openai-legacy-key", Description: "OpenAI legacy API key", Pattern: `\b(sk-[A-Za-z0-9]{48})\b`, Keywords: []string{"sk-"}},
	{ID: "huggingface-token", Description: "Hugging Face access token", Pattern: `\b(hf_[A-Za-z]{34,})\b`, Keywords: []string{"hf_"}},

	// Package registries and infrastructure.
	{ID: "npm-token", Description: "npm access token", Pattern: `\b(npm_[A-Za-z0-9]{36})\b`, Keywords: []string{"npm_"}},
	{ID: "pypi-token", Description: "PyPI upload token", Pattern: `(pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,})`, Keywords: []string{"pypi-ageichlwas5vcmc"}},
	{ID: "nuget-api-key", Description: "NuGet API key", Pattern: `\b(oy2[a-z0-9]{43})\b`, Keywords: []string{"oy2"}},
	{ID: "rubygems-api-key", Description: "RubyGems API key", Pattern: `\b(rubygems_[a-f0-9]{48})\b`, Keywords: []string{"rubygems_"}},
	{ID: "dockerhub-pat", Description: "Docker Hub personal access token", Pattern: `\b(dckr_pat_[A-Za-z0-9_\-]{27,})`, Keywords: []string{"dckr_pat_"}},
	{ID: "vault-token", Description: "HashiCorp Vault token", Pattern: `\b(hv[sbr]\.[A-Za-z0-9_\-]{24,})`, Keywords: []string{"hvs.", "hvb.", "hvr."}},
	{ID: "terraform-cloud-token", Description: "Terraform Cloud / HCP Terraform API token", Pattern: `\b([A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,70})`, Keywords: []string{"atlasv1"}},
	{ID: "doppler-token", Description: "Doppler token", Pattern: `\b(dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44})\b`, Keywords: []string{"dp."}},
	{ID: "pulumi-token", Description: "Pulumi access token", Pattern: `\b(pul-[a-f0-9]{40})\b`, Keywords: []string{"pul-"}},
	{ID: "age-secret-key", Description: "age encryption secret key", Pattern: `(AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})`, Keywords: []string{"age-secret-key-1"}},

	// Observability and identity.
	{ID: "datadog-api-key", Description: "Datadog API or application key in an assignment", Pattern: `(?i)(?:datadog|\bdd)[_\-]?(?:api|app|application)?[_\-]?key` + assign + `([a-f0-9]{40}|[a-f0-9]{32})\b`, Keywords: []string{"datadog", "dd_", "dd-", "ddapi", "ddapp"}},
	{ID: "newrelic-user-api-key", Description: "New Relic user API key", Pattern: `\b(NRAK-[A-Z0-9]{27})\b`, Keywords: []string{"nrak-"}},
	{ID: "newrelic-insert-key", Description: "New Relic insert key", Pattern: `\b(NRII-[A-Za-z0-9_\-]{32})` + tokEnd, Keywords: []string{"nrii-"}},
	{ID: "sentry-dsn-secret", Description: "Sentry DSN with a secret key", Pattern: `https?://[0-9a-f]{32}:([0-9a-f]{32})@[\w.\-]+(?::\d+)?/\d+`, Keywords: []string{"://"}},
	{ID: "sentry-auth-token", Description: "Sentry auth token", Pattern: `\b(sntry[su]_[A-Za-z0-9+/=_\-]{40,})`, Keywords: []string{"sntrys_", "sntryu_"}},
	{ID: "okta-api-token", Description: "Okta API token in an assignment", Pattern: `(?i)okta[\w.\-]{0,30}` + assign + `(00[A-Za-z0-9_\-]{40})` + tokEnd, Keywords: []string{"okta"}},
	{ID: "notion-token", Description: "Notion integration token", Pattern: `\b(secret_[A-Za-z0-9]{43}|ntn_\d{11}[A-Za-z0-9]{35})\b`, Keywords: []string{"secret_", "ntn_"}},

	// Private keys.
	{ID: "private-key-rsa", Description: "RSA private key", Pattern: `(-----BEGIN RSA PRIVATE KEY-----` + pemBody + `(?:-----END RSA PRIVATE KEY-----)?)`, Keywords: []string{"rsa private key"}},
	{ID: "private-key-ec", Description: "EC private key", Pattern: `(-----BEGIN EC PRIVATE KEY-----` + pemBody + `(?:-----END EC PRIVATE KEY-----)?)`, Keywords: []string{"ec private key"}},
	{ID: "private-key-dsa", Description: "DSA private key", Pattern: `(-----BEGIN DSA PRIVATE KEY-----` + pemBody + `(?:-----END DSA PRIVATE KEY-----)?)`, Keywords: []string{"dsa private key"}},
	{ID: "private-key-openssh", Description: "OpenSSH private key", Pattern: `(-----BEGIN OPENSSH PRIVATE KEY-----` + pemBody + `(?:-----END OPENSSH PRIVATE KEY-----)?)`, Keywords: []string{"openssh private key"}},
	{ID: "private-key-pgp", Description: "PGP private key block", Pattern: `(-----BEGIN PGP PRIVATE KEY BLOCK-----` + pemBody + `(?:-----END PGP PRIVATE KEY BLOCK-----)?)`, Keywords: []string{"pgp private key block"}},
	{ID: "private-key-pkcs8", Description: "PKCS #8 private key (plain or encrypted)", Pattern: `(-----BEGIN (?:ENCRYPTED )?PRIVATE KEY-----` + pemBody + `(?:-----END (?:ENCRYPTED )?PRIVATE KEY-----)?)`, Keywords: []string{"private key"}},

	// Structured tokens and URLs.
	{ID: "jwt", Description: "JSON Web Token", Pattern: `\b(eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})`, Keywords: []string{"eyj"}},
	{ID: "postgres-url-password", Description: "PostgreSQL URL with a password", Pattern: `\bpostgres(?:ql)?` + dbURL, Keywords: []string{"postgres"}},
	{ID: "mysql-url-password", Description: "MySQL URL with a password", Pattern: `\bmysqlx?` + dbURL, Keywords: []string{"mysql"}},
	{ID: "mongodb-url-password", Description: "MongoDB URL with a password", Pattern: `\bmongodb(?:\+srv)?` + dbURL, Keywords: []string{"mongodb"}},
	{ID: "redis-url-password", Description: "Redis URL with a password", Pattern: `\brediss?` + dbURL, Keywords: []string{"redis"}},
	{ID: "amqp-url-password", Description: "AMQP (RabbitMQ) URL with a password", Pattern: `\bamqps?` + dbURL, Keywords: []string{"amqp"}},

	// Generic assignments, last: a specific rule explains a match better.
	{ID: "generic-secret-assignment", Description: "High-entropy value assigned to a password, secret, token or key",
		Pattern:    `(?im)(?:password|passwd|pwd|secret|token|(?:api|access|auth|private|secret|signing|encryption|master)[_\-]?key|credentials?)` + `["'\x60]?[ \t]*(?::=|=>|=|:)[ \t]*(?:["'\x60]([^"'\x60\s]{16,200})["'\x60]|([A-Za-z0-9+/=_~\-!@#%^&*]{16,200})[ \t]*(?:#[^\n]*)?$)`,
		Keywords:   []string{"pass", "pwd", "secret", "token", "key", "credential"},
		MinEntropy: 3.5},
}

var builtinRules = sync.OnceValue(func() []Rule {
	rules, err := CompileRules(builtinSpecs)
	if err != nil {
		// The table is fixed at build time and its tests compile it.
		panic(err)
	}
	for i := range rules {
		r := &rules[i]
		r.identFilter = r.ID == "generic-secret-assignment"
		r.lineLocal = !multiLine[r.ID]
		if src := r.Pattern.String(); strings.HasPrefix(src, `\b`) {
			r.Pattern = regexp.MustCompile(src[len(`\b`):])
			r.wordStart = true
		}
	}
	return rules
})

// multiLine are the builtin rules whose matches may span lines; the others
// are searched only on lines holding one of their keywords.
var multiLine = map[string]bool{
	"gcp-service-account-key": true,
	"private-key-rsa":         true,
	"private-key-ec":          true,
	"private-key-dsa":         true,
	"private-key-openssh":     true,
	"private-key-pgp":         true,
	"private-key-pkcs8":       true,
}

// BuiltinRules returns weft's builtin detection rules, most specific first.
// The slice is fresh on every call; the compiled patterns are shared (a
// *regexp.Regexp is safe for concurrent use).
func BuiltinRules() []Rule {
	rules := slices.Clone(builtinRules())
	for i := range rules {
		rules[i].Keywords = slices.Clone(rules[i].Keywords)
	}
	return rules
}
