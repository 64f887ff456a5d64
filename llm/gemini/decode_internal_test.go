package gemini

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// normal makes empty slices nil, so that a reset chunk (which keeps its
// storage) compares equal to a fresh one.
func normal(c chunk) chunk {
	if len(c.Candidates) == 0 {
		c.Candidates = nil
		return c
	}
	cands := make([]candidate, len(c.Candidates))
	copy(cands, c.Candidates)
	for i := range cands {
		if len(cands[i].Content.Parts) == 0 {
			cands[i].Content.Parts = nil
		}
	}
	c.Candidates = cands
	return c
}

// FuzzFrameDecoder checks the frame decoder, which reuses one json.Decoder
// and one chunk across frames, against json.Unmarshal into a fresh chunk:
// same verdict, same result, frame after frame (frames are separated by
// blank lines in the input).
func FuzzFrameDecoder(f *testing.F) {
	f.Add(`{"candidates":[{"content":{"parts":[{"text":"a","thoughtSignature":"AQ=="},{"functionCall":{"name":"f","args":{"x":1}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3}}` +
		"\n\n" + `{"candidates":[{"content":{"parts":[{"text":"b"}]}}]}` + "\n\n" + `{"promptFeedback":{"blockReason":"SAFETY"}}`)
	f.Add(`{"candidates":[{"index":1},{"content":{"parts":[{},{"thought":true}]}}]}` + "\n\n" + `{"candidates":[{}]}` + "\n\n" + `{"candidates":[]}`)
	f.Add(`{"a":1}  ` + "\n\n" + ` {"error":{"code":1}}`)
	f.Add(`{}{}`)
	f.Add(`{"candidates":[{"content":{"parts":[{"text":5}]}}]}`)
	f.Add("{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}],\"candidates\":[{}]}\n\n \n\n123\n\nnull")
	f.Fuzz(func(t *testing.T, in string) {
		var d decoder
		d.dec = json.NewDecoder(&d.in)
		for i, frame := range strings.Split(in, "\n\n") {
			var fresh chunk
			errU := json.Unmarshal([]byte(frame), &fresh)
			d.c.reset()
			errD := d.decode([]byte(frame))
			if (errU == nil) != (errD == nil) {
				t.Fatalf("frame %d %q: Unmarshal error %v, decoder error %v", i, frame, errU, errD)
			}
			if errU != nil {
				return // the stream ends at the first bad frame
			}
			if got, want := normal(d.c), normal(fresh); !reflect.DeepEqual(got, want) {
				t.Fatalf("frame %d %q:\ndecoder   %+v\nUnmarshal %+v", i, frame, got, want)
			}
		}
	})
}
