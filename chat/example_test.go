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
