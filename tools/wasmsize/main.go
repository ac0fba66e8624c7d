// Command wasmsize prints what a Go js/wasm binary is made of: its sections and the code bytes of
// each package (from the function names in the binary's "name" section), largest first, so the
// page's weight can be traced to what links it. Build the binary without -s -w to keep the names.
//
//	GOOS=js GOARCH=wasm go build -o /some/dir/page.wasm ./browser
//	go -C tools run ./wasmsize [-n 40] [-funcs PREFIX] /some/dir/page.wasm
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

func main() {
	top := flag.Int("n", 40, "how many packages to print")
	funcs := flag.String("funcs", "", "print the functions whose names start with this prefix, largest first")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: wasmsize [-n N] [-funcs PREFIX] FILE.wasm")
		os.Exit(2)
	}
	b, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmsize:", err)
		os.Exit(1)
	}
	m, err := parse(b)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmsize:", err)
		os.Exit(1)
	}
	fmt.Printf("%-24s %10s\n", "section", "bytes")
	for _, s := range m.sections {
		fmt.Printf("%-24s %10d\n", s.name, s.size)
	}
	if len(m.names) == 0 {
		fmt.Println("(no name section: build without -ldflags=-s -w to see packages)")
		return
	}
	if *funcs != "" {
		type fn struct {
			name string
			size int
		}
		var list []fn
		for i, size := range m.codeSizes {
			name := m.names[uint32(m.imported+i)]
			if strings.HasPrefix(name, *funcs) {
				list = append(list, fn{name, size})
			}
		}
		sort.Slice(list, func(i, j int) bool { return list[i].size > list[j].size })
		for _, f := range list {
			fmt.Printf("%8d %s\n", f.size, f.name)
		}
		return
	}
	byPkg := map[string]int{}
	total := 0
	for i, size := range m.codeSizes {
		byPkg[pkgOf(m.names[uint32(m.imported+i)])] += size
		total += size
	}
	type row struct {
		pkg  string
		size int
	}
	var rows []row
	for p, s := range byPkg {
		rows = append(rows, row{p, s})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].size > rows[j].size })
	fmt.Printf("\ncode bytes by package (%d functions, %d bytes)\n", len(m.codeSizes), total)
	for i, r := range rows {
		if i == *top {
			break
		}
		fmt.Printf("%10d %5.1f%% %s\n", r.size, 100*float64(r.size)/float64(total), r.pkg)
	}
}

// pkgOf returns the package of a function named as Go's wasm name section spells it, with "/"
// and the receiver's "(*...)" turned into "_": "encoding_json.__decodeState_.value",
// "github.com_hack_pad_safejs.Value.Call". A leading domain keeps its dot.
func pkgOf(name string) string {
	if name == "" {
		return "(unnamed)"
	}
	start := 0
	if loc := domain.FindStringIndex(name); loc != nil {
		start = loc[1]
	}
	dot := strings.IndexByte(name[start:], '.')
	if dot < 0 {
		return name
	}
	return name[:start+dot]
}

// domain matches a module path's leading host as the name section spells it ("github.com_").
var domain = regexp.MustCompile(`^[a-z0-9-]+\.(com|org|net|io|in|dev)_`)

type section struct {
	name string
	size int
}

type module struct {
	sections  []section
	imported  int // imported functions come first in the function index space
	codeSizes []int
	names     map[uint32]string
}

var errShort = errors.New("truncated wasm binary")

func parse(b []byte) (*module, error) {
	if len(b) < 8 || !bytes.Equal(b[:4], []byte("\x00asm")) {
		return nil, errors.New("not a wasm binary")
	}
	m := &module{names: map[uint32]string{}}
	r := reader{b: b, off: 8}
	for r.off < len(b) {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.uleb()
		if err != nil {
			return nil, err
		}
		body, err := r.take(int(size))
		if err != nil {
			return nil, err
		}
		name := sectionNames[id]
		sr := reader{b: body}
		switch id {
		case 0:
			custom, err := sr.name()
			if err != nil {
				return nil, err
			}
			name = "custom " + custom
			if custom == "name" {
				if err := m.readNames(sr); err != nil {
					return nil, err
				}
			}
		case 2:
			n, err := countFuncImports(sr)
			if err != nil {
				return nil, err
			}
			m.imported = n
		case 10:
			count, err := sr.uleb()
			if err != nil {
				return nil, err
			}
			for range count {
				fsize, err := sr.uleb()
				if err != nil {
					return nil, err
				}
				if _, err := sr.take(int(fsize)); err != nil {
					return nil, err
				}
				m.codeSizes = append(m.codeSizes, int(fsize))
			}
		}
		m.sections = append(m.sections, section{name, int(size)})
	}
	return m, nil
}

var sectionNames = map[byte]string{1: "type", 2: "import", 3: "function", 4: "table", 5: "memory",
	6: "global", 7: "export", 8: "start", 9: "element", 10: "code", 11: "data", 12: "datacount"}

func countFuncImports(r reader) (int, error) {
	count, err := r.uleb()
	if err != nil {
		return 0, err
	}
	funcs := 0
	for range count {
		if _, err := r.name(); err != nil {
			return 0, err
		}
		if _, err := r.name(); err != nil {
			return 0, err
		}
		kind, err := r.byte()
		if err != nil {
			return 0, err
		}
		switch kind {
		case 0: // function: a type index
			funcs++
			if _, err := r.uleb(); err != nil {
				return 0, err
			}
		case 1: // table: reftype, limits
			if _, err := r.byte(); err != nil {
				return 0, err
			}
			if err := r.limits(); err != nil {
				return 0, err
			}
		case 2: // memory: limits
			if err := r.limits(); err != nil {
				return 0, err
			}
		case 3: // global: valtype, mutability
			if _, err := r.take(2); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("unknown import kind %d", kind)
		}
	}
	return funcs, nil
}

func (m *module) readNames(r reader) error {
	for r.off < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return err
		}
		size, err := r.uleb()
		if err != nil {
			return err
		}
		body, err := r.take(int(size))
		if err != nil {
			return err
		}
		if id != 1 { // function names
			continue
		}
		sr := reader{b: body}
		count, err := sr.uleb()
		if err != nil {
			return err
		}
		for range count {
			idx, err := sr.uleb()
			if err != nil {
				return err
			}
			n, err := sr.name()
			if err != nil {
				return err
			}
			m.names[uint32(idx)] = n
		}
	}
	return nil
}

type reader struct {
	b   []byte
	off int
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errShort
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) uleb() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		return 0, errShort
	}
	r.off += n
	return v, nil
}

func (r *reader) take(n int) ([]byte, error) {
	if n < 0 || r.off+n > len(r.b) {
		return nil, errShort
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s, nil
}

func (r *reader) name() (string, error) {
	n, err := r.uleb()
	if err != nil {
		return "", err
	}
	s, err := r.take(int(n))
	return string(s), err
}

func (r *reader) limits() error {
	flag, err := r.byte()
	if err != nil {
		return err
	}
	if _, err := r.uleb(); err != nil {
		return err
	}
	if flag&1 != 0 {
		_, err = r.uleb()
	}
	return err
}
