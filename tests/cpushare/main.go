//go:build linux

// Command cpushare runs a command and says where its CPU time went: it reads /proc/PID/stat of
// every process descended from the command about twice a second, keeps each one's last utime +
// stime, and prints a table of CPU-seconds by kind of process (Chromium's browser, renderer, GPU
// and utility processes, relays, test binaries, go builds run by tests, node, nats-server,
// Firefox) and by the test binary each process descends from. CPU-seconds hold up on a machine
// others load, where wall time does not. A process that lives less than one sample is missed,
// and so is its last half second.
//
//	go -C tests run ./cpushare -- go test -count=1 ./chaos/
package main

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sampleEvery is how often the processes are read.
const sampleEvery = 500 * time.Millisecond

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat (100 on Linux).
const clockTicks = 100

// proc is what was last seen of one process.
type proc struct {
	pid, ppid int
	cmdline   string
	cpu       float64 // utime + stime, in seconds
}

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: cpushare -- COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "cpushare:", err)
		os.Exit(1)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	seen := map[string]*proc{} // by "pid:starttime", so a reused pid is another process
	var err error
	for running := true; running; {
		sample(cmd.Process.Pid, seen)
		select {
		case err = <-done:
			running = false
		case <-time.After(sampleEvery):
		}
	}
	report(seen, time.Since(start))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cpushare:", err)
		os.Exit(1)
	}
}

// sample reads every process, and keeps those that descend from root.
func sample(root int, seen map[string]*proc) {
	entries, _ := os.ReadDir("/proc")
	type stat struct {
		ppid  int
		cpu   float64
		start string
	}
	now := map[int]stat{}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses and may hold spaces.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 20 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		now[pid] = stat{ppid, (utime + stime) / clockTicks, f[19]}
		children[ppid] = append(children[ppid], pid)
	}
	for stack := []int{root}; len(stack) > 0; {
		pid := stack[len(stack)-1]
		stack = append(stack[:len(stack)-1], children[pid]...)
		st, ok := now[pid]
		if !ok {
			continue
		}
		key := strconv.Itoa(pid) + ":" + st.start
		p := seen[key]
		if p == nil {
			p = &proc{pid: pid}
			seen[key] = p
		}
		// A zygote's child says it is a renderer only once it has become one: read again.
		if p.cmdline == "" || strings.Contains(p.cmdline, "--type=zygote") {
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			p.cmdline = strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		}
		p.ppid, p.cpu = st.ppid, st.cpu
	}
}

// kind names what a process is from its command line.
func kind(cmdline string) string {
	argv0, _, _ := strings.Cut(cmdline, " ")
	base := filepath.Base(argv0)
	switch {
	case strings.Contains(argv0, "chromium") || (argv0 == "/proc/self/exe" && strings.Contains(cmdline, "--type=")):
		// The browser process is the one without a --type; its --enable-features names
		// NetworkService too, so the types are matched by their whole flags.
		for _, k := range []struct{ flag, name string }{
			{"--top-chrome-webui", "Chromium browser UI (WebUI)"},
			{"--type=renderer", "Chromium renderer"},
			{"--type=gpu-process", "Chromium GPU"},
			{"--utility-sub-type=network.mojom.NetworkService", "Chromium network service"},
			{"--type=utility", "Chromium other utility"},
			{"--type=zygote", "Chromium zygote"},
		} {
			if strings.Contains(cmdline, k.flag) {
				return k.name
			}
		}
		return "Chromium browser"
	case strings.Contains(argv0, "firefox"):
		return "Firefox"
	case strings.HasSuffix(base, ".test"):
		return "test binary"
	case base == "relay" || (base == "sh" && strings.Contains(cmdline, "/relay")):
		return "relay"
	case strings.Contains(base, "nats-server"):
		return "nats-server"
	case base == "node":
		return "node"
	case base == "go" || strings.Contains(argv0, "/pkg/tool/"):
		return "go build"
	case cmdline == "":
		return "unknown (gone before its command line was read)"
	}
	return base
}

func report(seen map[string]*proc, wall time.Duration) {
	bypid := map[int]*proc{}
	for _, p := range seen {
		bypid[p.pid] = p
	}
	// binary names the test binary a process descends from, or "-".
	binary := func(p *proc) string {
		for range 32 {
			if p == nil {
				break
			}
			argv0, _, _ := strings.Cut(p.cmdline, " ")
			if strings.HasSuffix(argv0, ".test") {
				return filepath.Base(argv0)
			}
			p = bypid[p.ppid]
		}
		return "-"
	}
	byKind, count, byBinary := map[string]float64{}, map[string]int{}, map[string]map[string]float64{}
	total := 0.0
	for _, p := range seen {
		k, b := kind(p.cmdline), binary(p)
		byKind[k] += p.cpu
		count[k]++
		if byBinary[b] == nil {
			byBinary[b] = map[string]float64{}
		}
		byBinary[b][k] += p.cpu
		total += p.cpu
	}
	fmt.Printf("\ncpushare: %.0f s of wall time, %.0f CPU-seconds in %d processes\n\n", wall.Seconds(), total, len(seen))
	fmt.Println("| kind | processes | CPU-s | share |\n| --- | ---: | ---: | ---: |")
	for _, k := range sortedKeys(byKind) {
		fmt.Printf("| %s | %d | %.0f | %.0f%% |\n", k, count[k], byKind[k], 100*byKind[k]/max(total, 1))
	}
	fmt.Println("\n| test binary | CPU-s | of which |\n| --- | ---: | --- |")
	sums := map[string]float64{}
	for b, ks := range byBinary {
		for _, v := range ks {
			sums[b] += v
		}
	}
	for _, b := range sortedKeys(sums) {
		var parts []string
		for _, k := range sortedKeys(byBinary[b]) {
			if v := byBinary[b][k]; v >= 0.5 {
				parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
			}
		}
		fmt.Printf("| %s | %.0f | %s |\n", b, sums[b], strings.Join(parts, ", "))
	}
}

// sortedKeys returns m's keys, the largest value first.
func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	return keys
}
