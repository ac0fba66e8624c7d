//go:build !js

package tests

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// resultsApp is a mini-app whose WebMCP tools answer MCP tool results: one with two content items
// and structuredContent, one with isError.
const resultsApp = `<!doctype html><title>Forecast</title><p>forecast</p><script>
webMcp.registerTool({name: 'forecast', description: 'The forecast', parameters: {type: 'object', properties: {}},
  execute: () => ({content: [{type: 'text', text: 'sunny'}, {type: 'text', text: 'light wind'}], structuredContent: {temp: 21}})});
webMcp.registerTool({name: 'outage', description: 'Fails', parameters: {type: 'object', properties: {}},
  execute: () => ({content: [{type: 'text', text: 'the station is down'}], isError: true})});
</script>`

// TestAWebMCPToolsResultReachesMCPClientsAsMade: a mini-app's WebMCP tool that returns an MCP
// tool result reaches an MCP client of /mcp as it was made: its content items one by one, its
// structuredContent, its isError; not one text item holding its JSON.
func TestAWebMCPToolsResultReachesMCPClientsAsMade(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	s, changed := connectMCP(t, relay, "desk")
	if _, isErr := mcpCall(t, s, "write_file", map[string]string{"name": "forecast.html", "content": resultsApp}); isErr {
		t.Fatal("write_file of the app failed")
	}
	launchApp(t, tab, `{name: 'forecast.html'}`, 2)
	listed := mcpToolsListed(t, s, changed, "forecast", "outage")
	forecast, outage := listed["forecast"], listed["outage"]
	ctx, cancel := context.WithTimeout(context.Background(), mcpBound)
	defer cancel()
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: forecast, Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("forecast: %+v %v", res, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if !slices.Equal(texts, []string{"sunny", "light wind"}) || len(res.Content) != 2 || string(sc) != `{"temp":21}` {
		t.Fatalf("forecast came back as %v, structuredContent %s", texts, sc)
	}
	res, err = s.CallTool(ctx, &sdk.CallToolParams{Name: outage, Arguments: map[string]any{}})
	if err != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "the station is down" {
		t.Fatalf("outage came back as %+v %v", res, err)
	}
}
