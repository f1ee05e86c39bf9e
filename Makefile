# droid — build, test and measure. `make` lists the targets.
.DEFAULT_GOAL := help
CARGO ?= cargo
CARGO_FLAGS ?= --locked

.PHONY: help build test fmt fmt-check lint schema bench coverage fuzz demo clean

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

bench: ## Performance numbers (medians), see docs/benchmarks.md
	$(CARGO) bench $(CARGO_FLAGS) --bench bench

coverage: ## Screens each decider reaches on every app model, and identity rules against the truth (tables on stdout; minutes)
	$(CARGO) bench $(CARGO_FLAGS) --bench bench -- coverage identity

FUZZ_SECONDS ?= 60
FUZZ_SEED ?=
fuzz: ## Fuzz the parsers with mutated real inputs for FUZZ_SECONDS (default 60) from FUZZ_SEED (default: the clock)
	DROID_FUZZ_SECONDS=$(FUZZ_SECONDS) DROID_FUZZ_SEED=$(FUZZ_SEED) $(CARGO) test $(CARGO_FLAGS) --release --test integration fuzz:: -- --nocapture

demo: build ## Explore the bundled shop app on droid-sim, stage by stage (scripts/demo.sh)
	scripts/demo.sh $(STEPS)

clean: ## Remove build output
	$(CARGO) clean
