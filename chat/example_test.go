package chat_test

import (
	"fmt"

	"github.com/wasmlm/wasmlm/chat"
)

func ExampleDetect() {
	// A tokenizer.chat_template in the ChatML family (OpenHermes-2.5).
	src := "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
	tmpl, err := chat.Detect(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt, err := tmpl.Apply([]chat.Message{
		{Role: "system", Content: "You are a helpful assistant"},
		{Role: "user", Content: "Hello"},
	}, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(prompt)
	fmt.Printf("%s stops at %q\n", tmpl.Name(), tmpl.Stop())
	// Output:
	// <|im_start|>system
	// You are a helpful assistant<|im_end|>
	// <|im_start|>user
	// Hello<|im_end|>
	// <|im_start|>assistant
	// chatml stops at ["<|im_end|>"]
}

func ExampleNamed_plain() {
	// For a model without a chat template (a story model): the contents,
	// one per line, and nothing added for the reply.
	tmpl, err := chat.Named("plain")
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt, err := tmpl.Apply([]chat.Message{
		{Role: "user", Content: "Once upon a time"},
		{Role: "assistant", Content: "there was a dog."},
	}, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", prompt)
	// Output:
	// "Once upon a time\nthere was a dog."
}

func ExampleTemplate_ApplyWith() {
	// Qwen3 with thinking switched off (enable_thinking=false): the empty
	// think block follows the assistant opening, as Qwen3's template writes.
	tmpl, err := chat.Named("qwen3")
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt, err := tmpl.ApplyWith([]chat.Message{{Role: "user", Content: "Hi"}}, true, chat.Options{DisableThinking: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", prompt)
	// Output:
	// "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
}

func ExampleReasoningParser() {
	// A streamed reply whose tags arrive cut across tokens.
	var p chat.ReasoningParser
	for _, token := range []string{"<thi", "nk>\nThe user", " greets me.\n</th", "ink>\n\nHello", "!"} {
		reasoning, content := p.Write(token)
		fmt.Printf("reasoning %q content %q\n", reasoning, content)
	}
	reasoning, content := p.Flush()
	fmt.Printf("end: reasoning %q content %q\n", reasoning, content)
	// Output:
	// reasoning "" content ""
	// reasoning "The user" content ""
	// reasoning " greets me." content ""
	// reasoning "" content "Hello"
	// reasoning "" content "!"
	// end: reasoning "" content ""
}

func ExampleParseToolCalls() {
	tmpl, err := chat.Named("chatml") // Hermes / Qwen tool calls
	if err != nil {
		fmt.Println(err)
		return
	}
	reply := "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>"
	content, calls, err := chat.ParseToolCalls(tmpl.ToolFormat(), reply, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %q\n", tmpl.ToolFormat(), content)
	for _, c := range calls {
		fmt.Println(c.Name, c.Arguments, len(c.ID))
	}
	// Output:
	// hermes: "Let me look."
	// get_weather {"location":"Paris"} 29
}
