package toolschema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// referenceKeyOrders is keyOrders as it read raw through encoding/json's tokens, kept to hold the
// reflect-free one to it.
func referenceKeyOrders(raw []byte) map[string][]string {
	out := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func(loc string) bool
	walk = func(loc string) bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			var keys []string
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				k, ok := kt.(string)
				if err != nil || !ok {
					return false
				}
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
				if !walk(join(loc, k)) {
					return false
				}
			}
			out[loc] = jsOrder(keys)
			_, err := dec.Token()
			return err == nil
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if !walk(join(loc, strconv.Itoa(i))) {
					return false
				}
			}
			_, err := dec.Token()
			return err == nil
		}
		return true
	}
	walk("")
	return out
}

var keyOrderSamples = []string{`{}`, `{"b":1,"a":{"2":0,"1":0,"x":[{"z":1,"y":2}]},"b":{"c":1},"__proto__":null}`,
	` {"a.b":{"c d":[[{"k":1}]]}, "10":1, "9":2, "01":3}`, `[{"a":1},{"b":2}]`, `{"\u00e9":{"\ud800":1}}`}

func checkKeyOrders(t *testing.T, raw []byte) {
	if !json.Valid(raw) {
		return
	}
	if got, want := keyOrders(raw), referenceKeyOrders(raw); !reflect.DeepEqual(got, want) {
		t.Fatalf("keyOrders(%.80q) = %v; through encoding/json %v", raw, got, want)
	}
}

func TestKeyOrdersAgreeWithJSON(t *testing.T) {
	for _, s := range keyOrderSamples {
		checkKeyOrders(t, []byte(s))
	}
}

func FuzzKeyOrdersAgreeWithJSON(f *testing.F) {
	for _, s := range keyOrderSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkKeyOrders(t, raw) })
}
