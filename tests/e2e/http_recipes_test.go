//go:build !js

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recipesDoc is the page of recipes for JavaScript's LLM libraries whose
// code blocks TestHTTPServeRecipes runs as written.
const recipesDoc = "docs/recipes.md"

// recipesAddress is the server address the recipes are written for, which
// the test replaces with its server's.
const recipesAddress = "http://127.0.0.1:8080/v1"

// The JavaScript blocks of recipesDoc, in order: a provider and the recipes
// that follow it, each with what the test prints of the variables it
// leaves (JSON, on the program's last line).
var recipes = []struct {
	name     string
	provider int // the block of the provider the recipe runs after
	report   string
}{
	{name: "the AI SDK's provider"},
	{"generateText", 0, "{ text, usage }"},
	{"streamText", 0, "{ usage }"},
	{"generateObject", 0, "{ object }"},
	{"generateText with Output.object", 0, "{ output }"},
	{name: "LangChain's ChatOpenAI"},
	{"ChatOpenAI.invoke", 5, "{ content: reply.content, usage: reply.usage_metadata }"},
	{"ChatOpenAI.stream", 5, "{ usage }"},
}

// recipeResult is what a recipe program prints last (recipes' report).
type recipeResult struct {
	Text    string `json:"text"`
	Content string `json:"content"`
	Usage   struct {
		InputTokens  *int `json:"inputTokens"`  // the AI SDK's
		OutputTokens *int `json:"outputTokens"` // the AI SDK's
		LCInput      *int `json:"input_tokens"`
		LCOutput     *int `json:"output_tokens"`
	} `json:"usage"`
	Object *recipeObject `json:"object"`
	Output *recipeObject `json:"output"`
}

// recipeObject is the recipes' schema: z.object({ name: z.string().max(20), happy: z.boolean() }).
type recipeObject struct {
	Name  *string `json:"name"`
	Happy *bool   `json:"happy"`
}

// TestHTTPServeRecipes: docs/recipes.md's programs, each its provider's
// block and a recipe's, run as written with the pinned ai,
// @ai-sdk/openai-compatible, zod, @langchain/openai and @langchain/core
// against wasmlm serve: generateText, streamText and LangChain's invoke and
// stream give the server's greedy chat text and its token counts (streamed
// too), generateObject and Output.object an object of the schema. Without
// the provider's includeUsage the streamed usage is empty, and without
// supportsStructuredOutputs generateObject fails, as the page says.
func TestHTTPServeRecipes(t *testing.T) {
	root := repoRoot(t)
	node := needTool(t, "node", "Debian package nodejs")
	for _, pkg := range []string{"ai", "@ai-sdk/openai-compatible", "zod", "@langchain/openai", "@langchain/core"} {
		needTool(t, filepath.Join(root, "node_modules", filepath.FromSlash(pkg), "package.json"), "npm ci installs it from package-lock.json")
	}
	doc, err := os.ReadFile(filepath.Join(root, recipesDoc))
	require.NoError(t, err)
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```js\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		blocks = append(blocks, m[1])
	}
	require.Len(t, blocks, len(recipes), "%s's blocks: %v", recipesDoc, recipes)
	for i, b := range blocks {
		if recipes[i].report == "" {
			require.Contains(t, b, recipesAddress, "the provider's block, written for wasmlm serve's default address")
		}
	}

	srv := startServe(t)
	chat := postCompletion(t, srv.url, "/v1/chat/completions",
		`{"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 64, "temperature": 0}`)
	want := chat.Choices[0].Message.Content
	require.NotEmpty(t, want)

	dir := t.TempDir() // the programs import the packages from the repository's node_modules
	require.NoError(t, os.Symlink(filepath.Join(root, "node_modules"), filepath.Join(dir, "node_modules")))
	program := func(provider, recipe, report string) string {
		return strings.ReplaceAll(provider, recipesAddress, srv.url+"/v1") + "\n" + recipe +
			"\nconsole.log('\\n' + JSON.stringify(" + report + "));\n"
	}
	for i, r := range recipes {
		if r.report == "" {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			out, printed, stderr, err := runRecipe(t, node, dir, program(blocks[r.provider], blocks[i], r.report))
			require.NoError(t, err, "%s\n%s", stderr, out)
			var got recipeResult
			require.NoError(t, json.Unmarshal([]byte(out), &got), out)
			switch r.name {
			case "generateText":
				assert.Equal(t, want, got.Text)
			case "ChatOpenAI.invoke":
				assert.Equal(t, want, got.Content)
			case "streamText", "ChatOpenAI.stream":
				assert.Equal(t, want, printed, "the streamed text")
			case "generateObject", "generateText with Output.object":
				obj := got.Object
				if obj == nil {
					obj = got.Output
				}
				require.NotNil(t, obj, out)
				require.NotNil(t, obj.Name, out)
				require.NotNil(t, obj.Happy, out)
				assert.LessOrEqual(t, len([]rune(*obj.Name)), 20)
				return
			}
			in, outTokens := got.Usage.InputTokens, got.Usage.OutputTokens
			if strings.HasPrefix(r.name, "ChatOpenAI") {
				in, outTokens = got.Usage.LCInput, got.Usage.LCOutput
			}
			require.NotNil(t, in, "the usage: %s", out)
			require.NotNil(t, outTokens, "the usage: %s", out)
			assert.Equal(t, chat.Usage.PromptTokens, *in)
			assert.Equal(t, chat.Usage.CompletionTokens, *outTokens)
		})
	}

	t.Run("without the flags", func(t *testing.T) {
		bare := blocks[0]
		for _, flag := range []string{"includeUsage: true", "supportsStructuredOutputs: true"} {
			line := regexp.MustCompile(`(?m)^.*` + regexp.QuoteMeta(flag) + `.*\n`)
			require.Regexp(t, line, bare)
			bare = line.ReplaceAllString(bare, "")
		}
		out, printed, stderr, err := runRecipe(t, node, dir, program(bare, blocks[2], recipes[2].report))
		require.NoError(t, err, "%s\n%s", stderr, out)
		assert.Equal(t, want, printed, "the text streams all the same")
		var got recipeResult
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		assert.Nil(t, got.Usage.OutputTokens, "no streamed usage without includeUsage: %s", out)

		_, _, stderr, err = runRecipe(t, node, dir, program(bare, blocks[3], recipes[3].report))
		require.Error(t, err, "generateObject without supportsStructuredOutputs")
		assert.Contains(t, stderr, "AI_NoObjectGeneratedError")
	})
}

// runRecipe runs a program with Node.js in dir: its last line of output
// (the report), what it wrote before (a streamed text) and its stderr.
func runRecipe(t *testing.T, node, dir, program string) (last, before, stderr string, err error) {
	t.Helper()
	f, ferr := os.CreateTemp(dir, "recipe-*.mjs")
	require.NoError(t, ferr)
	_, ferr = f.WriteString(program)
	require.NoError(t, ferr)
	require.NoError(t, f.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, f.Name())
	cmd.Dir = dir
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	text := strings.TrimSuffix(string(out), "\n")
	if i := strings.LastIndex(text, "\n"); i >= 0 {
		before, last = text[:i], text[i+1:]
	} else {
		last = text
	}
	return last, before, errOut.String(), err
}
