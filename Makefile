# The two commands of the README: `make demo` (main job) and `make test` (whole suite).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OUT ?= acp-model-out
AGENT := $(BIN)/python -m acp_model.agents.reference

.PHONY: demo test test-fast lint venv examples services agents agents-all diagrams bench bench-budget docs matrix matrix-docs clean durations-snapshot

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# The main job: fuzz the bundled reference agent (a pass), then a mutant with a planted bug
# (a failure, shrunk to a minimal counterexample that is printed and can be replayed).
demo: $(STAMP)
	$(BIN)/acp-model fuzz --max-examples 100 --seed 1 --report $(OUT)/reference.json -- $(AGENT)
	@echo; echo "=== now a mutant that reports a cancelled turn as end_turn (exit 1 expected) ==="
	$(BIN)/acp-model fuzz --max-examples 100 --seed 1 --out $(OUT)/mutant \
	  --report $(OUT)/mutant.json -- $(AGENT) --mutant cancel_as_end_turn; test $$? -eq 1
	@echo; cat $(OUT)/mutant/CANCEL-07/counterexample.txt
	@echo; echo "Replay it: $(BIN)/acp-model replay $(OUT)/mutant/CANCEL-07/replay.json --runs 5"

# Example agents on the official ACP SDKs (pinned; their own venv and node_modules).
examples:
	bash examples/sdk-python/setup.sh
	bash examples/sdk-typescript/setup.sh

# What the tests need besides Python: Chromium, redis-server (apt-get when missing, as root),
# mermaid-cli (npm ci, pinned).
services:
	bash tests/services/setup.sh

# The real agents the fuzzer is tested on (npm ci from the profiles' own lockfiles); every
# profiled agent that can run offline (npm and PyPI, a few GB): make agents-all.
agents: $(STAMP)
	$(BIN)/acp-model agents install claude-agent-acp codex-acp qwen-code gemini-cli

agents-all: $(STAMP)
	$(BIN)/acp-model agents install --all

# The conformance matrix of every profiled agent (not in CI: minutes per agent), kept compacted
# in docs/matrix-run/, then the pages generated from it (matrix-docs). MATRIX_BUDGET seconds
# per row, MATRIX_JOBS rows at once; MATRIX_COVERAGE (--coverage; empty: none) measures each row's agent's
# own ACP layer (the agents page's coverage column); MATRIX_REPLAYS fresh-process replays of each
# failure (6: the page's "reproduced at least 5 of 6 times").
MATRIX_OUT ?= $(OUT)/matrix
MATRIX_BUDGET ?= 120
MATRIX_JOBS ?= 2
MATRIX_REPLAYS ?= 6
MATRIX_COVERAGE ?= --coverage
matrix: $(STAMP) agents
	$(BIN)/acp-model matrix --budget $(MATRIX_BUDGET) --jobs $(MATRIX_JOBS) $(MATRIX_COVERAGE) \
	  --replay-runs $(MATRIX_REPLAYS) --out $(MATRIX_OUT); \
	  test $$? -le 1
	rm -rf docs/matrix-run
	$(BIN)/acp-model matrix --rejudge $(MATRIX_OUT) --out docs/matrix-run --compact; test $$? -le 1
	$(MAKE) matrix-docs

# The agents page, the true bugs' reports and the page of what a revision would change, from
# the kept run judged again by the current code (tests/unit/test_matrix_committed.py fails when
# they differ from what it says). MATRIX_READING: the reading or revision that page shows.
MATRIX_READING ?= --spec seed
matrix-docs: $(STAMP)
	$(BIN)/acp-model matrix --rejudge docs/matrix-run --docs docs/agents.md; test $$? -le 1
	$(BIN)/acp-model matrix --rejudge docs/matrix-run $(MATRIX_READING) \
	  --out $(OUT)/matrix-reading --docs docs/matrix-readings.md; test $$? -le 1

# Every tier (tests/unit, tests/oracle, tests/live, tests/external: tests/conftest.py), the
# modules with the longest recorded time first (.test-durations, written by every run), then the
# whole rule sweep over the oracle tier: each rule switched off must fail some test. Four
# workers on two cores: the live tiers mostly wait on agents (deadlines, timers, start-ups),
# and two workers left the cores idle about half the time.
# Bytecode caches are written even where the environment turns them off: without them each of
# the suite's few hundred Python processes compiles the package again, and each pytest process
# rewrites the asserts of every plugin's modules again (seconds per process).
test test-fast: export PYTHONDONTWRITEBYTECODE :=
test: $(STAMP) examples services agents
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/pytest -n 4 --dist worksteal --durations=15
	$(BIN)/pytest -q -p no:xdist -m "not slow and not external" --rule-sweep=all \
	  --rule-sweep-report=.rule-sweep.json tests/oracle

# The fast tiers for local work and CI: only Python needed (no examples, services or agents);
# tests/live and tests/external run in `make test`.
test-fast: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/pytest -n 2 --dist worksteal -m "not slow and not external" tests/unit tests/oracle

# The scheduling snapshot a clean clone starts from (tests/durations.py): this clone's figures.
durations-snapshot:
	cp .test-durations tests/data/durations.json

lint: $(STAMP)
	$(BIN)/ruff check .

diagrams: $(STAMP) services
	$(BIN)/acp-model diagram --format all --out diagrams
	$(BIN)/acp-model diagram --style docs
	$(BIN)/acp-model diagram --style docs --spec sdk-2.4.0
	$(BIN)/acp-model diagram --format all --spec v1
	$(BIN)/acp-model diagram --format all --spec sdk-2.4.0
	$(BIN)/acp-model diagram --style docs --spec v1

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_check.py
	$(BIN)/python benchmarks/bench_fuzz.py
	$(BIN)/python benchmarks/bench_explore.py
	$(BIN)/python benchmarks/bench_proxy.py
	$(BIN)/python benchmarks/bench_real_agents.py
	$(BIN)/python benchmarks/bench_shrink.py

# --time-budget against wall time: the whole zoo, hostile agents, installed real agents, one run
# at a time (BUDGET=15 s by default; LOCK=PATH holds a shared machine's flock for each run)
BUDGET ?= 15
bench-budget: $(STAMP)
	$(BIN)/python benchmarks/bench_budget.py --budget $(BUDGET) $(if $(LOCK),--lock $(LOCK))

# The documentation site (docs/, mkdocs.yml) into site/; `make test` builds it with --strict
# too (tests/test_site.py). `$(BIN)/mkdocs serve` shows it while you write.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .hypothesis $(OUT)
