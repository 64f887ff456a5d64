package builtin

import (
	"net/url"
	"os"
	"testing"
)

// BenchmarkFetchDecodeHTML converts a real documentation page (see
// testdata/webfetch/README.md) as WebFetch does after reading it:
// charset detection, parsing, conversion. out-bytes is the size of the
// text the model gets.
func BenchmarkFetchDecodeHTML(b *testing.B) {
	page, err := os.ReadFile("testdata/webfetch/rust-book-data-types.html")
	if err != nil {
		b.Fatal(err)
	}
	base, _ := url.Parse("https://doc.rust-lang.org/book/ch03-02-data-types.html")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	var out string
	for b.Loop() {
		out = fetchDecode(page, "text/html", nil, "text/html; charset=utf-8", base)
	}
	b.ReportMetric(float64(len(out)), "out-bytes")
}
