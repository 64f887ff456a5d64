// Package vision lets a model without image input work with images (seed
// 003's VisionDescriberService): a vision model describes each image, and
// the text-only model gets the description in its place. Without a vision
// model, images are replaced by a note that says why they are missing,
// rather than sent to a model whose API would refuse them.
package vision

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/llm"
)

// DefaultPrompt asks for a description a model that cannot see can work
// with: the text in the image matters most (error messages, code, labels).
const DefaultPrompt = `Describe this image for an AI coding agent that cannot see it and has to work with it. Give:
- every piece of text in it, verbatim (code, error messages, labels, numbers, URLs);
- what it shows (a screenshot of which program or page, a diagram of what, a photo of what);
- the layout where it matters (the parts of a user interface and where they are, the boxes and arrows of a diagram, the rows and columns of a table).
Be precise and complete, and do not guess beyond what is visible.`

// Config configures a Describer.
type Config struct {
	// Provider and Model are the vision model. A nil Provider is a
	// Describer with no model: it only explains that images cannot be
	// described.
	Provider llm.Provider
	Model    string
	// MaxTokens bounds one description; 0 means 1024.
	MaxTokens int
	// Prompt is the instruction sent with each image; "" means
	// DefaultPrompt.
	Prompt string
	// CacheSize bounds how many descriptions are remembered (by the
	// image's content), so that an image in the history is described once,
	// not at every turn; 0 means 256.
	CacheSize int
	// Logger receives failures; nil means slog.Default().
	Logger *slog.Logger
}

// Describer describes images with a vision model. It is safe for
// concurrent use and meant to be shared by every session of a front door.
type Describer struct {
	cfg Config
	log *slog.Logger

	mu    sync.Mutex
	cache map[[32]byte]*list.Element // of entry
	lru   *list.List
	usage llm.Usage
	calls int
}

type entry struct {
	key  [32]byte
	text string
	// err, with failed, is a failure remembered for failureTTL, so that a
	// vision model that is down does not cost every turn a failed call.
	err    string
	failed time.Time
}

// failureTTL is how long a failed description is remembered.
const failureTTL = 5 * time.Minute

// New returns a describer for cfg.
func New(cfg Config) *Describer {
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 1024
	}
	if cfg.Prompt == "" {
		cfg.Prompt = DefaultPrompt
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 256
	}
	d := &Describer{cfg: cfg, log: cfg.Logger, cache: map[[32]byte]*list.Element{}, lru: list.New()}
	if d.log == nil {
		d.log = slog.Default()
	}
	return d
}

// Model names the vision model as "provider:model"; "" when there is none
// (a nil Describer included).
func (d *Describer) Model() string {
	if d == nil || d.cfg.Provider == nil {
		return ""
	}
	if d.cfg.Model == "" {
		return d.cfg.Provider.Name()
	}
	return d.cfg.Provider.Name() + ":" + d.cfg.Model
}

// Usage is what the vision model's calls used so far, and how many calls
// there were.
func (d *Describer) Usage() (llm.Usage, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.usage, d.calls
}

// ErrNoModel is returned by Describe when no vision model is configured.
var ErrNoModel = errors.New("no vision model is configured (start weft with --vision-model provider:model, a model that accepts images)")

// Describe asks the vision model about img (an image block). question,
// when set, is asked instead of the default instruction, and its answer is
// not cached.
func (d *Describer) Describe(ctx context.Context, img llm.Block, question string) (string, error) {
	if d.Model() == "" {
		return "", ErrNoModel
	}
	if img.Type != llm.BlockImage {
		return "", errors.New("not an image")
	}
	var key [32]byte
	if question == "" {
		key = imageKey(img)
		if text, ok, err := d.cached(key); ok {
			return text, err
		}
	}
	prompt := d.cfg.Prompt
	if question != "" {
		prompt = "Look at this image and answer for an AI coding agent that cannot see it. Quote any text that matters verbatim.\n\n" + question
	}
	req := &llm.Request{
		Model:     d.cfg.Model,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{img, llm.Text(prompt)}}},
		MaxTokens: d.cfg.MaxTokens,
		Cache:     llm.CacheOff,
	}
	var res llm.Result
	for attempt := 1; ; attempt++ {
		res = llm.Collect(d.cfg.Provider.Stream(ctx, req))
		d.mu.Lock()
		d.usage.Add(res.Usage)
		d.calls++
		d.mu.Unlock()
		if res.Outcome.Status == llm.StatusCompleted || attempt == 2 || !res.Outcome.Retryable() || ctx.Err() != nil {
			break
		}
		t := time.NewTimer(max(res.Outcome.RetryAfter, time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	var err error
	text := strings.TrimSpace(res.Message.Text())
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err() // not the model's fault: not remembered
	case res.Outcome.Status != llm.StatusCompleted:
		msg := res.Outcome.Message
		if msg == "" {
			msg = string(res.Outcome.Status)
		}
		err = fmt.Errorf("the vision model %s failed: %s", d.Model(), msg)
	case text == "":
		err = fmt.Errorf("the vision model %s gave no description", d.Model())
	}
	if question == "" {
		d.remember(key, text, err)
	}
	return text, err
}

func imageKey(img llm.Block) [32]byte {
	h := sha256.New()
	h.Write([]byte(img.MediaType))
	h.Write([]byte{0})
	h.Write([]byte(img.URL))
	h.Write([]byte{0})
	h.Write(img.Data)
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

func (d *Describer) cached(k [32]byte) (text string, ok bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	el, found := d.cache[k]
	if !found {
		return "", false, nil
	}
	e := el.Value.(*entry)
	if e.err != "" {
		if time.Since(e.failed) > failureTTL {
			d.lru.Remove(el)
			delete(d.cache, k)
			return "", false, nil
		}
		return "", true, errors.New(e.err)
	}
	d.lru.MoveToFront(el)
	return e.text, true, nil
}

func (d *Describer) remember(k [32]byte, text string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := &entry{key: k, text: text}
	if err != nil {
		e.text, e.err, e.failed = "", err.Error(), time.Now()
	}
	if el, ok := d.cache[k]; ok {
		el.Value = e
		d.lru.MoveToFront(el)
		return
	}
	d.cache[k] = d.lru.PushFront(e)
	for d.lru.Len() > d.cfg.CacheSize {
		old := d.lru.Back()
		d.lru.Remove(old)
		delete(d.cache, old.Value.(*entry).key)
	}
}

// Replace rewrites req for a model that cannot see images: every image in
// its messages (in user messages and in tool results) becomes a text
// block, the vision model's description of it or a note saying why there
// is none. model names the text-only model in those notes. Messages are
// copied where they change: the caller's history is never touched. d may
// be nil (no vision model).
func Replace(ctx context.Context, req *llm.Request, d *Describer, model string) {
	var msgs []llm.Message // copied on the first change
	for i := range req.Messages {
		content, changed := replaceBlocks(ctx, req.Messages[i].Content, d, model)
		if !changed {
			continue
		}
		if msgs == nil {
			msgs = append([]llm.Message(nil), req.Messages...)
		}
		msgs[i] = llm.Message{Role: req.Messages[i].Role, Content: content}
	}
	if msgs != nil {
		req.Messages = msgs
	}
}

func replaceBlocks(ctx context.Context, blocks []llm.Block, d *Describer, model string) ([]llm.Block, bool) {
	var out []llm.Block
	for i, b := range blocks {
		nb := b
		changed := false
		switch b.Type {
		case llm.BlockImage:
			nb, changed = llm.Text(d.note(ctx, b, model)), true
		case llm.BlockToolResult:
			if content, ok := replaceBlocks(ctx, b.Content, d, model); ok {
				nb.Content, changed = content, true
			}
		}
		if changed && out == nil {
			out = append([]llm.Block(nil), blocks...)
		}
		if changed {
			nb.CacheHint = b.CacheHint
			out[i] = nb
		}
	}
	return out, out != nil
}

// note is the text an image is replaced by.
func (d *Describer) note(ctx context.Context, img llm.Block, model string) string {
	what := describeBlock(img)
	if d.Model() == "" {
		return fmt.Sprintf("[%s was here. %s cannot see images, and no vision model is configured to describe them (weft --vision-model provider:model), so it was left out.]", what, model)
	}
	text, err := d.Describe(ctx, img, "")
	if err != nil {
		d.log.Warn("describing an image failed", "vision_model", d.Model(), "error", err)
		return fmt.Sprintf("[%s was here. %s cannot see images, and it could not be described: %v]", what, model, err)
	}
	return fmt.Sprintf("[%s, described by %s because %s cannot see images:]\n%s", what, d.Model(), model, text)
}

func describeBlock(img llm.Block) string {
	mt := img.MediaType
	if mt == "" {
		mt = "image"
	}
	switch {
	case img.URL != "":
		return fmt.Sprintf("An image (%s, %s)", mt, img.URL)
	case len(img.Data) >= 1<<20:
		return fmt.Sprintf("An image (%s, %.1f MB)", mt, float64(len(img.Data))/(1<<20))
	default:
		return fmt.Sprintf("An image (%s, %.1f KB)", mt, float64(len(img.Data))/(1<<10))
	}
}
