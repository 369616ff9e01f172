# Two entry points: `make demo` and `make test`. Both bootstrap .venv once; the stamp file
# is rebuilt only when pyproject.toml changes, so re-running does not reinstall.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test venv browser clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/bayes-s2r demo

# The suite is mostly XLA compiles, which run on one core each: two worker processes
# (TEST_WORKERS) take about 30% off a 2-core run. A test file stays in one worker, so its
# module fixtures and compiled functions are shared as in a single process. The run ends
# with its 25 slowest tests, where time is to be won back.
TEST_WORKERS ?= 2

test: $(STAMP) browser
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

# The report test opens the page in a real headless Chromium. Debian's package is installed
# when it is missing and this is a root shell with apt-get (a fresh CI machine); elsewhere
# install it yourself, or the browser test is skipped.
browser:
	@if [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's chromium for the report test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "no Chromium: the report's browser test will be skipped"; fi

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
