package eventlog

import "github.com/weft-run/weft/event"

// redact applies Options.Redact to the events' data. The caller's slice
// is left alone: a copy is made on the first change.
func (l *Log) redact(events []event.Event) []event.Event {
	if l.opt.Redact == nil {
		return events
	}
	out := events
	for i, e := range events {
		if len(e.Data) == 0 {
			continue
		}
		red := l.opt.Redact(e.Data)
		if len(red) == len(e.Data) && &red[0] == &e.Data[0] {
			continue
		}
		if &out[0] == &events[0] {
			out = append([]event.Event(nil), events...)
		}
		out[i].Data = red
	}
	return out
}
