package externalapps

import "testing"

// BenchmarkMint measures minting one identity token (HS256 over the registered claims).
func BenchmarkMint(b *testing.B) {
	reg, err := Parse([]byte(goodRegistry()))
	if err != nil {
		b.Fatal(err)
	}
	m := &Minter{Registry: reg, Issuer: issuer}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Mint("orders", "local"); err != nil {
			b.Fatal(err)
		}
	}
}
