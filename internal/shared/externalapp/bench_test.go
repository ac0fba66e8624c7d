package externalapp

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkToolsAndInstruction measures what the relay does when an app's tools change: check 20
// reported tools (clamps, the schema subset, model names) and build the app's instruction section
// and declarations.
func BenchmarkToolsAndInstruction(b *testing.B) {
	var reported []ReportedTool
	for i := range 20 {
		reported = append(reported, ReportedTool{
			Name:        fmt.Sprintf("tool_%d", i),
			Description: "Change the status of one order in the order book, given its id and the new status.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","maxLength":20},"status":{"type":"string","enum":["open","shipped","cancelled"]}},"required":["id","status"]}`),
			ReadOnly:    i%2 == 0,
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		tools, dropped := Tools("orders", reported)
		if len(tools) != 20 || len(dropped) != 0 {
			b.Fatalf("%d tools, %v dropped", len(tools), dropped)
		}
		apps := []App{{ID: "orders", Name: "Order Book", Description: "The order book.", Live: true, Context: true, Tools: tools}}
		if Instruction(apps) == "" || len(Declarations(apps)) != 21 {
			b.Fatal("no instruction")
		}
	}
}
