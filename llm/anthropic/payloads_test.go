package anthropic

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzPayloads checks that the reused json.Decoder accepts and rejects
// exactly what json.Unmarshal does, and decodes the same values, across a
// sequence of payloads (so that nothing leaks from one into the next).
func FuzzPayloads(f *testing.F) {
	seeds := [][2]string{
		{`{"index":1,"delta":{"type":"text_delta","text":"hi"}}`, `{"index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}`},
		{`{"index":1} `, `{"index":2}`},
		{`{"index":1}}`, `{"index":2}`},
		{`{"index":1} {"index":3}`, `{"index":2}`},
		{`{"index":1`, `}`},
		{``, `{"index":2}`},
		{`  {"index":1}`, "\n{\"index\":2}\r\n"},
		{`{"index":"x"}`, `{"index":2}`},
		{`7`, `null`},
		{`{"delta":{"type":"text_delta","text":"\u00e9\ud83d\ude00"}}`, `[]`},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var p payloads
		for _, in := range []string{a, b, a} {
			var got, want blockDeltaFrame
			gerr := p.decode([]byte(in), &got)
			werr := json.Unmarshal([]byte(in), &want)
			if (gerr == nil) != (werr == nil) {
				t.Fatalf("%q: decode error %v, Unmarshal error %v", in, gerr, werr)
			}
			if gerr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: decoded %+v, Unmarshal %+v", in, got, want)
			}
		}
	})
}
