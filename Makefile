# droid — build, test and measure. `make` lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash
CARGO ?= cargo
CARGO_FLAGS ?= --locked

.PHONY: help build test fmt fmt-check lint schema docs bench coverage fuzz demo pipe clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## Build every binary (debug)
	$(CARGO) build $(CARGO_FLAGS) --bins

fmt: ## Format the code
	$(CARGO) fmt --all

fmt-check: ## Fail when the code is not formatted
	$(CARGO) fmt --all -- --check

lint: ## clippy on every target, warnings are errors
	$(CARGO) clippy $(CARGO_FLAGS) --all-targets -- -D warnings

test: fmt-check lint ## fmt check, clippy and every test (what CI runs)
	$(CARGO) test $(CARGO_FLAGS) --all-targets

schema: ## Regenerate docs/events.schema.json from the event types
	DROID_WRITE_SCHEMA=1 $(CARGO) test $(CARGO_FLAGS) --test integration events::schema_is_current

docs: ## Rewrite the coverage tables in docs/decide.md and BENCH.md from bench.json
	DROID_WRITE_DOCS=1 $(CARGO) test $(CARGO_FLAGS) --test integration docs::coverage_tables_are_bench_json_s

bench: ## Performance numbers (medians) into BENCH.md and bench.json, see docs/benchmarks.md
	set -o pipefail; $(CARGO) bench $(CARGO_FLAGS) --bench bench -- --json=bench.json | tee BENCH.md

coverage: ## Screens each decider reaches on every app model (into bench.json, then `make docs`), and identity rules against the truth (tables on stdout; about 25 minutes for heuristic, dfs and random alone: DECIDERS=heuristic,dfs,random; the model deciders with the stand-in take longer)
	$(CARGO) bench $(CARGO_FLAGS) --bench bench -- coverage identity --json=bench.json

FUZZ_SECONDS ?= 60
FUZZ_SEED ?=
fuzz: ## Fuzz the parsers with mutated real inputs for FUZZ_SECONDS (default 60) from FUZZ_SEED (default: the clock)
	DROID_FUZZ_SECONDS=$(FUZZ_SECONDS) DROID_FUZZ_SEED=$(FUZZ_SEED) $(CARGO) test $(CARGO_FLAGS) --release --test integration fuzz:: -- --nocapture

DEMO_STEPS ?= 92
DEMO_DIR ?= target/demo
demo: build ## Crawl the bundled shop app on a simulated phone with the heuristic (DEMO_STEPS, default 92); prints where the session folder, reports and summary are
	@mkdir -p $(DEMO_DIR)
	target/debug/droid-crawl --sim builtin:shop --decider heuristic --max-steps $(DEMO_STEPS) \
		--db $(DEMO_DIR)/crawler.db --out $(DEMO_DIR)/output_data --report pdf,html,text \
		> $(DEMO_DIR)/events.jsonl
	@echo "events (stdout): $(DEMO_DIR)/events.jsonl" >&2

pipe: build ## The same exploration with the stage binaries in a shell pipe (scripts/pipe.sh [STEPS] [APP])
	scripts/pipe.sh $(STEPS)

clean: ## Remove build output
	$(CARGO) clean
