//go:build !js

package e2e

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/models"
)

// nodeSplit is a Node.js program that loads the default model from its file
// path in 1, 2 and 3 worker threads and, in each, generates greedily,
// aborts a stream after its fifth chunk and generates again; then leaves a
// split model loaded, which must not keep the process alive.
const nodeSplit = `import { WasmLM } from 'wasmlm';
const out = [];
for (const workers of [1, 2, 3]) {
  const lm = await WasmLM.load('node_modules/wasmlm/models/` + models.DefaultFile + `', { workers });
  const first = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 100 });
  const ac = new AbortController();
  const stream = lm.stream('Once upon a time', { temperature: 0, maxTokens: 200, signal: ac.signal });
  let chunks = 0;
  for await (const c of stream) if (++chunks === 5) ac.abort();
  const finish = (await stream.result).finishReason;
  const again = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 100 });
  out.push({ workers: lm.info.workers, exchange: lm.info.exchange ?? '', text: first.text, tokens: first.tokens, again: again.tokens, chunks, finish });
  lm.unload();
}
const idle = await WasmLM.load('node_modules/wasmlm/models/` + models.DefaultFile + `', { workers: 2 });
await idle.generate('Once upon a time', { maxTokens: 8 });
console.log(JSON.stringify(out));
`

// In Node.js a split model's worker threads exchange through shared memory
// (WASMLM_SHARED_MEMORY=0: by messages), with the tokens of one worker and
// llama2.c's text either way; an abort mid-stream leaves the model usable,
// and the program exits by itself with a split model still loaded (runIn's
// three minutes bound a process that would never exit).
func TestNPMNodeSplitSharesMemory(t *testing.T) {
	node := needTool(t, "node", "Debian package nodejs")
	want := greedyOnceUponATime(t)
	dir := npmApp(t, map[string]string{"main.mjs": nodeSplit})
	for _, tc := range []struct {
		env      []string
		exchange string
	}{
		{nil, "shared-memory"},
		{[]string{"WASMLM_SHARED_MEMORY=0"}, "messages"},
	} {
		t.Run(tc.exchange, func(t *testing.T) {
			var got []struct {
				Workers  int    `json:"workers"`
				Exchange string `json:"exchange"`
				Text     string `json:"text"`
				Tokens   []int  `json:"tokens"`
				Again    []int  `json:"again"`
				Chunks   int    `json:"chunks"`
				Finish   string `json:"finish"`
			}
			require.NoError(t, json.Unmarshal([]byte(runIn(t, dir, tc.env, node, "main.mjs")), &got))
			require.Len(t, got, 3)
			for i, r := range got {
				assert.Equal(t, i+1, r.Workers)
				if r.Workers > 1 {
					assert.Equal(t, tc.exchange, r.Exchange, "%d workers", r.Workers)
				} else {
					assert.Empty(t, r.Exchange, "one worker exchanges nothing")
				}
				assert.Equal(t, want, r.Text, "%d workers: llama2.c's text", r.Workers)
				assert.Equal(t, got[0].Tokens, r.Tokens, "%d workers: one worker's tokens", r.Workers)
				assert.Equal(t, r.Tokens, r.Again, "%d workers: after the abort", r.Workers)
				assert.Equal(t, "abort", r.Finish, "%d workers", r.Workers)
				assert.Less(t, r.Chunks, 100, "%d workers: the abort stopped the stream", r.Workers)
			}
		})
	}
}
