package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-run/weft/tool"
)

func ExampleFunc() {
	type repeatInput struct {
		Text  string `json:"text" jsonschema:"what to repeat"`
		Times int    `json:"times,omitempty" jsonschema:"how often; default 2"`
	}
	repeat := tool.Func("Repeat", "Repeats a text.", tool.Meta{ReadOnly: true, ConcurrencySafe: true},
		func(ctx context.Context, in repeatInput, call *tool.Call) (tool.Result, error) {
			if in.Times == 0 {
				in.Times = 2
			}
			return tool.Text(strings.Repeat(in.Text, in.Times)), nil
		})

	reg, err := tool.NewRegistry(repeat)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(reg.Specs()[0].InputSchema))

	for _, input := range []string{`{"text":"ab","times":3}`, `{"text":"ab"}`, `{"times":"3"}`} {
		res := reg.Execute(context.Background(), &tool.Call{ID: "1", Name: "Repeat", Input: json.RawMessage(input)})
		fmt.Printf("%v %s\n", res.IsError, res.TextOf())
	}
	// Output:
	// {"type":"object","properties":{"text":{"type":"string","description":"what to repeat"},"times":{"type":"integer","description":"how often; default 2"}},"required":["text"],"additionalProperties":false}
	// false ababab
	// false abab
	// true invalid arguments for Repeat:
	// - missing required property "text"
	// - /times: got string, want integer
}
