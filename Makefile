# wirestream: `make test` bootstraps everything from a fresh clone; see README.md.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PY_DIRS := setup.py wirestream/__init__.py wirestream/__main__.py wirestream/apps codegen runtime generated tests bench

.PHONY: native docs venv node-deps java-peers tshark chromium generate check-generated lint typecheck pytest ts-build ts-test test fuzz fuzz-rust mutate soak bench demo demo-web clean broker broker-stop broker-installed servers-installed servers servers-stop

# The venv is (re)built whenever pyproject.toml changes.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,spark,docs,native]'
	touch $(STAMP)

venv: $(STAMP)

# The Node side (npm workspaces runtime/typescript, runtime/typescript/rsocket and
# generated/typescript: TypeScript, @msgpack/msgpack, ws for the Node WebSocket server,
# rsocket-core 0.0.27 for the identity tests, rsocket-js 1.0.0-alpha.3 (rsocket-*-1 aliases)
# for the interop tests and bench, esbuild and playwright-core for the browser tests)
# is installed exactly as package-lock.json pins it, again whenever the lockfile or a
# package.json changes.
NODE_STAMP := node_modules/.installed
$(NODE_STAMP): package.json package-lock.json runtime/typescript/package.json generated/typescript/package.json \
		runtime/typescript/rsocket/package.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

node-deps: $(NODE_STAMP)

# The Java test peers: tests/support/java/rsocket is rsocket-java 1.1.5 (the RSocket reference
# implementation) for the resumption, lease and keepalive interop tests. Built once per
# change of its pom or sources into target/classes + target/lib (no tests, no jar);
# Maven keeps what it downloads in ~/.m2 (a first build fetches ~40 MB).
JAVA_RSOCKET := tests/support/java/rsocket
JAVA_STAMP := $(JAVA_RSOCKET)/target/.built
$(JAVA_STAMP): $(JAVA_RSOCKET)/pom.xml $(shell find $(JAVA_RSOCKET)/src -name '*.java')
	mvn -B -q -Dstyle.color=never -f $(JAVA_RSOCKET)/pom.xml compile dependency:copy-dependencies
	touch $(JAVA_STAMP)

# tests/support/java/rabbitmq is RabbitMQ's Java stream client (com.rabbitmq:stream-client 1.11.0,
# the reference implementation of the stream protocol, with its compression codecs) for
# the RabbitMQ interop tests; built the same way (a first build fetches ~15 MB).
JAVA_RABBITMQ := tests/support/java/rabbitmq
JAVA_RABBITMQ_STAMP := $(JAVA_RABBITMQ)/target/.built
$(JAVA_RABBITMQ_STAMP): $(JAVA_RABBITMQ)/pom.xml $(shell find $(JAVA_RABBITMQ)/src -name '*.java')
	mvn -B -q -Dstyle.color=never -f $(JAVA_RABBITMQ)/pom.xml compile dependency:copy-dependencies
	touch $(JAVA_RABBITMQ_STAMP)

java-peers: $(JAVA_STAMP) $(JAVA_RABBITMQ_STAMP)

# tshark runs the generated Wireshark dissectors (generated/wireshark/*.lua) in
# tests/wireshark/test_wireshark.py: Debian's package (Debian 12: Wireshark 4.0, Lua 5.2), installed
# with apt when missing (needs root).  wireshark-common asks whether non-superusers may
# capture packets; the answer (no: only reading files is needed) is given to debconf first,
# so the install never prompts.  Idempotent: nothing happens when tshark is there.
tshark:
	@if ! command -v tshark >/dev/null 2>&1; then \
		if [ "$$(id -u)" != 0 ]; then echo "tshark is missing; install it as root: make tshark" >&2; exit 1; fi; \
		echo "installing tshark (apt-get)"; \
		echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tshark >/dev/null; \
	fi

# The real browser of the browser tests (tests/typescript/test_package.py,
# test_browser_rsocket.py and tests/project/test_demo_chart.py): Debian's chromium, driven
# headless by playwright-core (pinned in package.json; it never downloads a browser),
# installed with apt when missing (needs root), with a font for the pages' text (the
# demo chart's screenshot).  Idempotent: nothing happens when both are there.
chromium:
	@if ! command -v chromium >/dev/null 2>&1 || [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "chromium is missing; install it as root: make chromium" >&2; exit 1; fi; \
		echo "installing chromium (apt-get)"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; \
	fi

# The real servers of the MQTT 5, PostgreSQL and MySQL/MariaDB tests (tests/support/servers.py):
# Debian's mosquitto 2.0, postgresql-15 and mariadb-server 10.11, installed with apt when
# missing (needs root; a no-op when they are there). The test session starts and stops
# its own private instances (tools/servers.sh); it never installs, so this comes first.
servers-installed:
	@tools/servers.sh install all

# The RabbitMQ broker of the broker tests (tests/support/rabbitmq_broker.py): Debian's
# rabbitmq-server (3.10), installed with apt when missing (needs root; a no-op when it is
# there). The test session starts a private node when none answers on 5552 and stops it
# at the end; it never installs, so this comes first.
broker-installed:
	@tools/broker.sh install

# wirestream.runtime._native (runtime/rust/wirestream-native: the capture -> Arrow batch decoder the
# capture Spark source uses; docs/rust.md): built with maturin (the `native` extra) into
# runtime/_native.abi3.so (git-ignored) whenever its crate, the generated Rust it includes
# (the codecs, frame_log/, py_pack/) or the support crate change. Without cargo it is not built and the pure-Python path is
# used (tools/native.sh says so); `make test` needs cargo anyway (check-generated).
NATIVE := runtime/_native.abi3.so
NATIVE_SOURCES := $(shell find runtime/rust/wirestream-native runtime/rust/wirestream-runtime \
	generated/rust -path '*/target' -prune -o -type f \( -name '*.rs' -o -name 'Cargo.*' \) -print 2>/dev/null)
$(NATIVE): $(STAMP) $(NATIVE_SOURCES)
	tools/native.sh $(BIN)/python

native: venv
	@if command -v cargo >/dev/null 2>&1; then $(MAKE) --no-print-directory $(NATIVE); \
	else tools/native.sh $(BIN)/python; fi

# idl/**/*.yaml -> generated/** (Python, black-formatted), generated/typescript/ (the npm package)
# and generated/wireshark/ (a Lua dissector per protocol version): the CLI's defaults.
# Incremental: only what an IDL (or the generator) change affects is rendered again
# (generated/.wirestream-cache.json, git-ignored; codegen/incremental.py).
generate: venv
	$(BIN)/python -m wirestream.codegen generate
	@if command -v rustfmt >/dev/null 2>&1; then $(BIN)/python -m wirestream.codegen generate --target rust; \
	else echo "rustfmt missing: generated/rust left as it is (make check-generated needs it)"; fi

# Regenerate into a temporary folder (no cache; the Rust workspace too, which is not yet in
# `all`) and diff: fails on any difference (cargo's own Cargo.lock and target/ aside).
check-generated: venv
	@tmp=$$(mktemp -d); \
	$(BIN)/python -m wirestream.codegen generate --no-cache --out $$tmp/generated --package wirestream.generated >/dev/null && \
	$(BIN)/python -m wirestream.codegen generate --target rust --out $$tmp/generated >/dev/null 2>&1 && \
	diff -ru --exclude=__pycache__ --exclude=py.typed --exclude=dist --exclude=node_modules --exclude='*.tsbuildinfo' --exclude=.wirestream-cache.json \
		--exclude=target --exclude=Cargo.lock --exclude=.gitignore generated $$tmp/generated; \
	rc=$$?; rm -rf $$tmp; \
	if [ $$rc -ne 0 ]; then echo "generated/ is stale: run 'make generate' and commit it" >&2; exit 1; fi; \
	echo "generated/ is fresh"

lint: venv
	$(BIN)/black --check --quiet $(PY_DIRS)

typecheck: venv
	tools/typecheck.sh

# --durations: every run (CI's too) ends with its 25 slowest tests, where make test's time goes
# Three worker processes (pytest-xdist), a test file each at a time: most tests wait on
# sockets, servers and child processes, so on this 2-core machine two workers kept 1.4
# cores busy; three keep both (a fresh-clone run's pytest: 1,079 s against 1,232 s with
# two, 48 min in one process). The servers and the broker are shared by the workers
# (tests/support/shared_services.py). Then the tests marked `alone` (they need the machine
# to themselves), in one process. PYTEST_WORKERS=0: everything in one process, as before.
PYTEST_WORKERS ?= 3
pytest: venv native node-deps java-peers tshark chromium servers-installed broker-installed
ifeq ($(PYTEST_WORKERS),0)
	$(BIN)/pytest -q --durations=25
else
	$(BIN)/pytest -q --durations=25 -n $(PYTEST_WORKERS) --dist loadfile -m "not alone"
	$(BIN)/pytest -q -m alone
endif

# runtime/, generated/ and tests/typescript -> their dist/ (tsc -b: incremental, strict).
ts-build: node-deps
	npx tsc -b

# The node:test suites: the compiled tests/typescript/**/*.test.ts, listed (Node >= 21 no
# longer searches a directory given to --test; a deleted test's stale .js is not run).
TS_TESTS = $(shell find tests/typescript -name '*.test.ts' -not -path '*/dist/*' | sort | \
	sed -e 's|^tests/typescript/|tests/typescript/dist/|' -e 's|\.ts$$|.js|')
# corpus.test.ts checks the cross-language corpus that Python writes (tests/crosslang).
ts-test: venv ts-build
	@corpus=$$(mktemp -d); \
	$(BIN)/python -m tests.crosslang.corpus $$corpus >/dev/null && \
	WIRESTREAM_CORPUS=$$corpus WIRESTREAM_PYTHON=$(BIN)/python node --test $(TS_TESTS); \
	rc=$$?; rm -rf $$corpus; exit $$rc

# ts-build, not ts-test: pytest runs every node:test suite itself (tests/typescript/test_typescript.py,
# corpus.test.ts through tests/crosslang/test_crosslang.py), so ts-test here ran each suite
# twice and wrote the cross-language corpus once more; tsc -b still fails early, before pytest.
#
# The set-up steps in two overlapping stages (-j3: each step but the Rust build uses one
# core, and none writes what another reads; --output-sync keeps each step's output whole):
# the Python, Node and Java installs, then the extension's build beside the checks
# (freshness, docs, black, mypy, tsc). On a fresh clone, one after another they took
# 56 + 5 + 10 s and 46 + 9 + 7 + 26 + 13 + 23 s.
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target venv node-deps java-peers
	$(MAKE) --no-print-directory -j3 --output-sync=target native check-generated docs lint typecheck ts-build
	$(MAKE) --no-print-directory pytest

# The documentation site (mkdocs.yml) into the git-ignored site/: --strict fails on any
# warning (a broken link, a missing page, an API object that does not resolve).
# NO_MKDOCS_2_WARNING: Material's notice about its own end of life, not about this site.
docs: venv
	WIRESTREAM_PACKAGE_TREE=$$(tools/package_tree.sh) NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# Coverage-guided fuzzing (README.md, "Fuzzing"): every codec and engine target in turn under
# atheris, FUZZ_SECONDS in all (FUZZ_TARGETS="codec.rsocket.v1_0 ..." for some; FUZZ_RUNS=n
# inputs per target instead of time).  atheris is the `fuzz` extra, installed here only:
# `make test` replays the committed corpus without it (tests/fuzz/test_fuzz_corpus.py).
FUZZ_SECONDS ?= 240
FUZZ_STAMP := $(VENV)/.fuzz-installed
$(FUZZ_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,spark,docs,fuzz]'
	touch $(FUZZ_STAMP)

fuzz: $(FUZZ_STAMP)
	$(BIN)/python -m tests.fuzz --seconds $(FUZZ_SECONDS) $(if $(FUZZ_RUNS),--runs $(FUZZ_RUNS)) \
		$(foreach t,$(FUZZ_TARGETS),--target $(t))

# Mutation testing (docs/mutation.md): mutmut mutates the modules that keep the flow, credit,
# lease, keepalive and resume rules and runs the fast sans-I/O tests that cover them
# ([tool.mutmut] in pyproject.toml), in a staged copy under build/mutate/; prints the kill
# rate per module. About 5 minutes on 2 cores (MUTATE_JOBS=n workers); not in `make test`.
mutate: venv
	tools/mutate.sh $(BIN)/python

# The Rust codecs' fuzz harness (generated/rust/fuzz, stable toolchain: a deterministic mutation
# loop over every crate's decode and stream splitter, docs/rust.md): FUZZ_RUST_RUNS inputs per
# protocol version, from the committed corpora; inputs with a new outcome go to out/fuzz/rust
# (copy the worthwhile ones to tests/fuzz/rust, which `make test` replays), findings to
# out/fuzz/rust-findings.
FUZZ_RUST_RUNS ?= 1000000
fuzz-rust:
	cargo build --release --quiet --manifest-path generated/rust/Cargo.toml -p wirestream-fuzz
	generated/rust/target/release/wirestream-fuzz --runs $(FUZZ_RUST_RUNS) \
		--corpus tests/fuzz/corpus --corpus tests/fuzz/rust \
		--save out/fuzz/rust --findings out/fuzz/rust-findings

# The chaos soak (docs/soak.md): RSocket (some sessions resumable), rsio, BPMUX and RabbitMQ
# clients at once, ~310 connections, through proxies that cut, stall and throttle at
# random, beside garbage-sending and trickling peers, for MINUTES; the report says what
# it held, the faults by kind and what was lost (exit 1 on any broken invariant).
# SEED=n repeats a run's random decisions, SCALE=f multiplies the workers.  `make test`
# runs a one-minute version (tests/runtime/test_chaos_soak.py).  Needs the broker.
MINUTES ?= 10
soak: venv broker
	$(BIN)/python -m tests.support.chaos --minutes $(MINUTES) $(if $(SEED),--seed $(SEED)) \
		$(if $(SCALE),--scale $(SCALE))

# The RabbitMQ figures need the broker: `broker` starts it (a no-op when it runs).
# bench.rust_ratios builds bench/rust (the generated Rust codec, a hand-written loop and
# rsocket_rust 0.7.5) and puts it against the generated Python decode in the same run.
# bench/typescript_codec.ts (built by ts-build: the root tsconfig references bench/) puts
# the generated TypeScript codec against rsocket-js in the same Node run.
# bench/rsocket_clients.ts (built by ts-build too) puts the @wirestream/rsocket client against
# rsocket-js 1.0.0-alpha.3's on the same Node server (ours, then rsocket-js's) in one run:
# request-stream and 64-in-flight request-response throughput, memory per idle connection.
# bench.rabbitmq_codecs runs the Java stream client (java-peers) beside ours, per codec.
bench: venv native broker ts-build java-peers
	$(BIN)/python -m bench.codec
	$(BIN)/python -m bench.rust_ratios
	$(BIN)/python -m bench.families
	node bench/dist/typescript_codec.js
	node bench/dist/rsocket_clients.js
	$(BIN)/python -m bench.rsocket_runtime
	$(BIN)/python -m bench.rsio_stream
	$(BIN)/python -m bench.rabbitmq_runtime
	$(BIN)/python -m bench.rabbitmq_codecs
	$(BIN)/python -m bench.capture_pcap
	$(BIN)/python -m bench.native_capture
	$(BIN)/python -u -m bench.spark_ratios

# The main job: ticker -> Spark Structured Streaming -> Parquet under out/demo/.
# SOURCE=rsocket (default: in-process RSocket ticker, nothing to install) or rabbitmq.
# LIVE=1 also serves a page on 127.0.0.1 (its URL is printed) that draws the windows as
# Spark closes them, fed over RSocket-over-WebSocket, until Ctrl-C (its script is the
# committed bundle of wirestream/apps/demo_web: no Node needed).
SOURCE ?= rsocket
demo: generate native
	$(if $(filter rabbitmq,$(SOURCE)),tools/broker.sh start)
	$(BIN)/python -m wirestream.apps.demo --source $(SOURCE) $(if $(filter 1 yes true,$(LIVE)),--live)

# The demo pages' scripts (wirestream/apps/demo_web/*.js, committed) from their
# TypeScript sources, with the pinned esbuild: after a change to them or to the
# @wirestream packages the live page bundles (tests/project/test_demo_live.py fails
# until then).
demo-web: ts-build
	$(BIN)/python -m wirestream.apps.demo_web

# A private RabbitMQ node (stream plugin, loopback only), kept running for a session of
# work (benchmarks, demos, repeated test runs); the test session then uses it and leaves
# it running. `make test` does not need it: its test session starts and stops its own.
broker:
	tools/broker.sh start

broker-stop:
	tools/broker.sh stop

# The three private servers of tests/support/servers.py (loopback: mosquitto 18830 + anonymous 18831,
# PostgreSQL 15432, MariaDB 13306; tools/servers.sh says who logs in how), kept running
# for a session of work: the test session then uses them and leaves them running.
servers:
	tools/servers.sh start all

servers-stop:
	tools/servers.sh stop all

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .hypothesis site
	rm -rf node_modules runtime/typescript/dist runtime/typescript/rsocket/dist generated/typescript/dist tests/typescript/dist
	rm -rf $(JAVA_RSOCKET)/target
	rm -rf $(NATIVE) runtime/rust/wirestream-native/target
