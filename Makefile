# The Context Staircase: build the book and run every check.
#   make book   execute every chapter and build the HTML into _build/html (strict)
#   make check  ruff and the fast library tests (not slow, not book): the check before every commit, <= 2 minutes
#   make test   ruff, library tests, student notebooks under nbval, strict book build, browser test
#   make lab      start here as a student: JupyterLab on mywork/, your own copies of the student notebooks
#   make student  copy the student notebooks (notebooks/student) into mywork/; never over one already there
#   make editions build the book, then regenerate the notebook editions in notebooks/ (Colab and Jupyter) from it
#   make book-student  the book built from the student notebooks (no solutions) into _build/html-student (strict)
#   make bench  speed and memory benchmarks -> benchmarks/RESULTS.md (fails if a target is missed)
#   make autograder  otter-grader autograders (one zip per chapter, for Gradescope) in _build/autograder
# Both create .venv and install everything on first use; they need only python3 (3.11) and make.

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VENDOR := _vendor/vendor/.stamp

# The strict book build, shared by `book` and `test`. Always from scratch (--all and no old doctrees),
# because an incremental build hides warnings. The kernels run offline (staircase_lib/offline/sitecustomize.py).
define build-book
rm -rf _build/html _build/.doctrees
$(NB_ENV) OMP_NUM_THREADS=$(BOOK_THREADS) PYTHONPATH="$$($(OFFLINE_PYTHONPATH))" PATH="$(CURDIR)/$(VENV)/bin:$$PATH" \
	$(VENV)/bin/jupyter-book build --all . -W -n --keep-going
endef

# Every book/test target runs headless: STAIRCASE_HEADLESS for the library, two BLAS threads, and
# matplotlib's Agg backend for plain Python. Jupyter kernels need the inline backend instead (with
# MPLBACKEND=Agg a notebook's figures are never displayed, so the book would lose every plot), so the
# commands that execute notebooks override it with NB_ENV.
export STAIRCASE_HEADLESS := 1
export OMP_NUM_THREADS := 2
# The chapters load their recorded long runs unless asked to train them live (`make book STAIRCASE_FULL=1`,
# which takes hours on a CPU and less on a GPU): the same book and the same test on every machine.
export STAIRCASE_FULL ?= 0
BOOK_THREADS := $(OMP_NUM_THREADS)
NB_ENV := MPLBACKEND=module://matplotlib_inline.backend_inline
# The kernels' network guard first on PYTHONPATH, from the one place that builds the offline environment.
OFFLINE_PYTHONPATH := $(PY) -c 'from staircase_lib.offline import offline_pythonpath; print(offline_pythonpath())'

.PHONY: install vendor book book-student editions lab check test test-library chromium test-student-notebooks test-book-build bench student autograder clean distclean

install: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -r requirements.txt
	$(PY) -m pip install -e .
	touch $@

# otter-grader lives in its own environment, .venv-otter, layered on .venv: a .pth file puts .venv's packages
# (torch, the pinned tools, this library) after its own, so it installs only otter-grader and the ~20 packages
# .venv lacks (about 15-50 s, instead of minutes for a second torch) and never changes .venv itself.
OTTER_VENV := .venv-otter
OTTER_STAMP := $(OTTER_VENV)/.installed
PURELIB := import sysconfig; print(sysconfig.get_paths()["purelib"])

$(OTTER_STAMP): $(STAMP)
	test -x $(OTTER_VENV)/bin/python || python3 -m venv $(OTTER_VENV)
	$(PY) -c '$(PURELIB)' > "$$($(OTTER_VENV)/bin/python -c '$(PURELIB)')/_staircase_venv.pth"
	$(OTTER_VENV)/bin/python -m pip install -e ".[autograder]"
	touch $@

autograder: $(OTTER_STAMP)
	$(OTTER_VENV)/bin/python -m staircase_lib.coursework autograder --out _build/autograder

vendor: $(VENDOR)

$(VENDOR): tools/vendor_js.sh tools/mathjax_hub_shim.js tools/widget_a11y.js
	tools/vendor_js.sh

book: $(STAMP) $(VENDOR)
	$(build-book)

# The quick check: the lint and every library test not marked slow (no kernel, no subprocess run, no trained claim
# on new seeds; those are marked `slow`, see tests/conftest.py) and no book test. `make test` runs all of them.
check: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest tests -m "not slow and not book" -n 2 --dist loadgroup -q

# Chromium installs (apt-get: mostly download and unpack) beside the Python installs and the library tests, which
# do not need it; its log is printed when it is done, so the tests' output is not interleaved with apt's. Each pytest
# stage ends with its 15 slowest tests: where the time of `make test` goes.
test:
	$(MAKE) -j2 chromium test-library
	$(MAKE) -j2 test-student-notebooks test-book-build
	$(PY) -m pytest tests -m book -rs -n 2 --dist loadgroup --durations=15

test-library: $(STAMP) $(VENDOR) $(OTTER_STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest tests -m "not book" -n 2 --dist loadgroup -rs --durations=15 --cov=staircase_lib --cov-report=term --cov-fail-under=90

chromium:
	@mkdir -p _build
	@tools/install_chromium.sh > _build/install_chromium.log 2>&1 || { cat _build/install_chromium.log; exit 1; }
	@grep -E "^install_chromium|Chromium [0-9]" _build/install_chromium.log || true
	@grep -A6 WARNING _build/install_chromium.log >&2 || true

# The two runs of every chapter, side by side on the two cores (each kernel on one thread, so neither spins
# on the other's core): the student notebooks under nbval (time budget per chapter), and the full chapters
# in the strict book build.
# CHAPTER_TIME_LIMIT: the course's budget is 60 s per chapter on an idle 2-core machine, which `make bench`
# measures (benchmarks/RESULTS.md). Here each notebook shares the machine with the book build, and CI machines
# differ in speed, so the test's limit is a hang guard, not the budget.
test-student-notebooks: $(STAMP)
	OMP_NUM_THREADS=1 CHAPTER_TIME_LIMIT=$${CHAPTER_TIME_LIMIT:-300} $(NB_ENV) $(PY) tools/run_chapters.py

test-book-build: BOOK_THREADS := 1
test-book-build: $(STAMP) $(VENDOR)
	$(build-book)

# Not part of `test`: timings need a quiet machine. The chapters run with the inline backend (bench.py
# sets it for the kernels only).
bench: $(STAMP)
	$(PY) benchmarks/bench.py

# The notebook editions (notebooks/NN_slug.ipynb and notebooks/student/NN_slug.ipynb) are generated from the chapters
# and from what the built book knows (numbers, references, glued values: notebooks/book_context.json), and committed,
# so that Colab opens them from the repository; tests/test_editions.py checks that they are current.
editions: book
	$(PY) -m staircase_lib.coursework editions chapters/[0-9][0-9]_*.ipynb --from-build _build --out notebooks

# A student's own folder: mywork/ (git ignores it, and no target writes over or deletes a notebook there).
STUDENT_WORK := mywork
student: $(STAMP)
	$(PY) -m staircase_lib.coursework copy-student notebooks/student --to $(STUDENT_WORK)

lab: student
	$(VENV)/bin/jupyter lab --notebook-dir=$(STUDENT_WORK)

# The book a class can publish: a copy of the book's sources with the student notebooks as chapters, built as
# strictly as `book`. The student notebooks run top to bottom (`make test` checks that under nbval): a check
# of a stub prints "not attempted".
STUDENT_SRC := _build/student-src
book-student: $(STAMP) $(VENDOR)
	rm -rf $(STUDENT_SRC) _build/html-student
	mkdir -p $(STUDENT_SRC)/chapters
	cp -r _config.yml _toc.yml intro.md references.bib appendix images _static _vendor $(STUDENT_SRC)/
	$(PY) -m staircase_lib.coursework student chapters/[0-9][0-9]_*.ipynb --out $(STUDENT_SRC)/chapters
	$(NB_ENV) PYTHONPATH="$$($(OFFLINE_PYTHONPATH))" PATH="$(CURDIR)/$(VENV)/bin:$$PATH" \
		$(VENV)/bin/jupyter-book build --all $(STUDENT_SRC) -W -n --keep-going
	mv $(STUDENT_SRC)/_build/html _build/html-student

clean:
	rm -rf _build _vendor *.egg-info build .pytest_cache .coverage .hypothesis

distclean: clean
	rm -rf $(VENV) $(OTTER_VENV)
