package chat

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzApply feeds arbitrary message text (and an arbitrary template source
// to Detect) through every template: nothing may panic, valid roles never
// fail, the output is deterministic, and plain is exactly the joined text.
func FuzzApply(f *testing.F) {
	f.Add("You are a helpful assistant", "Hello", "   Hi there   ", "<|im_start|>", true)
	f.Add("", "", "", "", false)
	f.Add("[INST] <<SYS>>", "\x00\xff\xfe", " \t\n\v\f\r", "{% for message in messages %}", true)
	f.Fuzz(func(t *testing.T, system, user, assistant, jinja string, addAssistant bool) {
		if tmpl, err := Detect(jinja); err == nil {
			if _, err := tmpl.Apply([]Message{{Role: "user", Content: user}}, addAssistant); err != nil {
				t.Fatalf("detected %s: %v", tmpl.Name(), err)
			}
		}
		if _, err := Named(jinja); (err == nil) != slices.Contains(Names(), jinja) || (err != nil && !errors.Is(err, ErrUnknownTemplate)) {
			t.Fatalf("Named(%q): %v", jinja, err)
		}
		msgs := []Message{
			{Role: "system", Content: system},
			{Role: "user", Content: user},
			{Role: "assistant", Content: assistant},
			{Role: "user", Content: system + user},
		}
		for _, name := range Names() {
			tmpl, err := Named(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, conv := range [][]Message{msgs, msgs[1:], msgs[2:3], msgs[:1]} {
				a, err := tmpl.Apply(conv, addAssistant)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				b, err := tmpl.Apply(conv, addAssistant)
				if err != nil || a != b {
					t.Fatalf("%s: not deterministic", name)
				}
			}
			_, err = tmpl.Apply([]Message{{Role: system, Content: user}}, addAssistant)
			if err == nil && !tmpl.f.allows(system) {
				t.Fatalf("%s: accepted role %q", name, system)
			}
		}
		plain, err := Named("plain")
		if err != nil {
			t.Fatal(err)
		}
		got, err := plain.Apply(msgs, addAssistant)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Join([]string{system, user, assistant, system + user}, "\n"); got != want {
			t.Fatalf("plain: got %q, want %q", got, want)
		}
	})
}
