package secret

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

type stringer struct{ s string }

func (x stringer) String() string { return x.s }

type valuer struct{ s string }

func (x valuer) LogValue() slog.Value { return slog.StringValue(x.s) }

func TestHandler(t *testing.T) {
	t.Parallel()
	const pw, tok = "hunter2hunter2", "tok-abcdef-123"
	s := mustSet(t, "PW", pw, "TOKEN", tok)
	for _, kind := range []string{"json", "text"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			var inner slog.Handler = slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})
			if kind == "text" {
				inner = slog.NewTextHandler(&buf, nil)
			}
			log := slog.New(NewHandler(inner, s))
			log.With("bound", "bound "+pw).WithGroup("g").Info("login with "+pw,
				"plain", "x "+tok,
				slog.Group("nested", "deep", pw, slog.Group("deeper", "d", tok)),
				"err", fmt.Errorf("dial: %w", errors.New("auth "+tok+" rejected")),
				"stringer", stringer{"s=" + pw},
				"valuer", valuer{"v=" + pw},
				"bytes", []byte("b="+pw),
				"struct", struct{ P string }{pw},
				"count", 3,
				pw, "as key",
			)
			out := buf.String()
			if strings.Contains(out, pw) || strings.Contains(out, tok) {
				t.Fatalf("secret in log: %s", out)
			}
			for _, want := range []string{"login with [SECRET:PW]", "bound [SECRET:PW]", "x [SECRET:TOKEN]", "auth [SECRET:TOKEN] rejected", "s=[SECRET:PW]", "v=[SECRET:PW]", "b=[SECRET:PW]", "{P:[SECRET:PW]}", "[SECRET:PW]"} {
				if !strings.Contains(out, want) {
					t.Errorf("%q missing from %s", want, out)
				}
			}
			if !strings.Contains(out, "count") || !strings.Contains(out, "3") {
				t.Errorf("non-string attribute lost: %s", out)
			}
		})
	}
}

func TestHandlerKeepsValuesWithoutSecrets(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewJSONHandler(&buf, nil), mustSet(t, "PW", "hunter2hunter2")))
	log.Info("m", "n", 1.5, "err", errors.New("plain"), "list", []int{1, 2})
	if got := buf.String(); !strings.Contains(got, `"n":1.5`) || !strings.Contains(got, `"err":"plain"`) || !strings.Contains(got, `"list":[1,2]`) {
		t.Fatalf("values changed: %s", got)
	}
	if !NewHandler(slog.NewJSONHandler(&buf, nil), mustSet(t)).Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("Enabled not delegated")
	}
	h := slog.NewJSONHandler(&buf, nil)
	if NewHandler(h, nil) != slog.Handler(h) {
		t.Fatal("a nil set should not wrap")
	}
}
