package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/session"
)

type sessionsConfig struct {
	state stateDirFlags
	all   bool
}

func sessionsFlags(stderr io.Writer) (*flag.FlagSet, *sessionsConfig) {
	cfg := &sessionsConfig{}
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.state.register(fs)
	fs.BoolVar(&cfg.all, "all", false, "with revoke: revoke every session")
	return fs, cfg
}

// parseInterleaved parses flags wherever they stand among the positional arguments
// (`sessions revoke --all` as well as `sessions --all revoke`) and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

const sessionsUsage = "relay sessions: usage: relay sessions [--state-dir DIR] [list] | revoke ID | revoke --all"

// runSessions lists or revokes the sessions of the relay serving the state directory, through
// its control socket.
func runSessions(args []string, stdout, stderr io.Writer) int {
	fs, cfg := sessionsFlags(stderr)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	verb := "list"
	if len(pos) > 0 {
		verb = pos[0]
	}
	switch {
	case verb == "list" && len(pos) <= 1 && !cfg.all:
	case verb == "revoke" && (len(pos) == 2) != cfg.all && len(pos) <= 2:
	default:
		fmt.Fprintln(stderr, sessionsUsage)
		return 2
	}
	state, err := cfg.state.open()
	if err != nil {
		fmt.Fprintf(stderr, "relay sessions: %v\n", err)
		return 1
	}
	switch {
	case verb == "list":
		var got struct {
			Gate     bool           `json:"gate"`
			Sessions []session.Info `json:"sessions"`
		}
		if err := controlCall(state, http.MethodGet, "/api/sessions", nil, &got); err != nil {
			fmt.Fprintf(stderr, "relay sessions: %v\n", err)
			return 1
		}
		if !got.Gate {
			fmt.Fprintln(stderr, "relay sessions: this relay runs without the session gate (VOICEBOX_LOOPBACK_AUTH=1), so it has no sessions")
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSIGNED IN\tEXPIRES\tCLIENT\tSOCKETS")
		for _, s := range got.Sessions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", s.ID, s.Created.UTC().Format(time.RFC3339), s.Expires.UTC().Format(time.RFC3339), s.Client, s.Sockets)
		}
		tw.Flush()
		return 0
	case cfg.all:
		var got struct {
			Revoked int `json:"revoked"`
		}
		if err := controlCall(state, http.MethodDelete, "/api/sessions", nil, &got); err != nil {
			fmt.Fprintf(stderr, "relay sessions: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "revoked %s\n", count(got.Revoked, "session"))
		return 0
	}
	id := pos[1]
	var got struct {
		Sockets int `json:"sockets"`
	}
	if err := controlCall(state, http.MethodDelete, "/api/sessions/"+id, nil, &got); err != nil {
		fmt.Fprintf(stderr, "relay sessions: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "revoked %s (closed %s)\n", id, count(got.Sockets, "socket"))
	return 0
}

func ticketFlags(stderr io.Writer) (*flag.FlagSet, *stateDirFlags) {
	var dir stateDirFlags
	fs := flag.NewFlagSet("ticket", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir.register(fs)
	return fs, &dir
}

// runTicket mints a one-time bootstrap address on the relay serving the state directory and
// prints it alone on stdout.
func runTicket(args []string, stdout, stderr io.Writer) int {
	fs, dir := ticketFlags(stderr)
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "relay ticket: usage: relay ticket [--state-dir DIR]")
		return 2
	}
	state, err := dir.open()
	if err != nil {
		fmt.Fprintf(stderr, "relay ticket: %v\n", err)
		return 1
	}
	var got struct {
		URL     string    `json:"url"`
		Expires time.Time `json:"expires"`
	}
	if err := controlCall(state, http.MethodPost, "/api/bootstrap", nil, &got); err != nil {
		fmt.Fprintf(stderr, "relay ticket: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, got.URL)
	fmt.Fprintf(stderr, "open it once in the browser that will use the page, before %s; it starts a session\n", got.Expires.Local().Format(time.RFC3339))
	return 0
}

// count spells n things: "1 session", "2 sessions".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
