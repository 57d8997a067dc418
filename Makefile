# printk-rig: build kernels and QEMU, boot them, judge the console.
# `make demo` and `make test` install and build everything they need.

PYTHON  := /usr/bin/python3
RIG     := $(PYTHON) -m rig
PYTEST  := $(PYTHON) -m pytest

# PROFILE=rt or PROFILE=debug: every target builds and boots the kernels of
# that profile (docs/profiles.md); unset, the default profile.
ifdef PROFILE
export RIG_PROFILE := $(PROFILE)
endif

# Every Debian package the rig needs (install-deps.sh installs only the missing ones).
PACKAGES := \
	build-essential ccache bc bison flex libelf-dev libssl-dev cpio xz-utils kmod patch \
	linux-source-6.12 \
	dpkg-dev ninja-build meson pkg-config libglib2.0-dev libpixman-1-dev libfdt-dev zlib1g-dev \
	libseccomp-dev \
	seabios qemu-system-data \
	busybox-static util-linux \
	python3 python3-pytest python3-pexpect python3-pytest-xdist python3-jsonschema python3-jinja2 gdb \
	chromium libvirt-daemon-system libvirt-clients python3-libvirt tini iproute2

.PHONY: help deps kernel qemu initramfs series-check build demo test test-profiles unit tools-check flake-check mutants golden replay determinism-check report libvirtd scenarios hosts bench bench-commands bench-fleet bench-long-logs bench-cold clean prune-cache clean-cache

help:
	@echo "make demo        the patched kernel: an NMI's emergency line overtakes a backlog, live"
	@echo "make test        unit tests + scenarios on both kernel flavors"
	@echo "make test-profiles  the scenarios on the rt and debug kernel profiles, both flavors"
	@echo "                 (SMOKE_FLAVORS=vanilla: vanilla only S1 and the golden scenarios there;"
	@echo "                 PROFILE=rt|debug on any target: that profile's kernels)"
	@echo "make unit        unit tests only (no QEMU boot, no kernel build)"
	@echo "make deps        install missing Debian packages (apt-get, via sudo if not root)"
	@echo "make kernel | qemu | initramfs | build   build what is not in the cache"
	@echo "make series-check  apply, checkpatch --strict and build kernel-patches/ patch by patch"
	@echo "make flake-check   run the scenarios 5 times, fail if any verdict changes"
	@echo "make mutants       run the scenarios on each kernel mutant; fail if one is not caught"
	@echo "make golden      rerun the golden scenarios and rewrite golden/ (says what changed)"
	@echo "make replay RUN=DIR [GDB=1]  re-run a recorded boot, compare its evidence bytes"
	@echo "make report [JUNIT=runs/junit.xml]  HTML page per kept run (verdicts, transcript, timeline) + index"
	@echo "make libvirtd    start libvirtd (for pytest --backend libvirt) unless it runs"
	@echo "make scenarios HOSTS=FILE  the scenarios on a fleet of libvirt hosts (docs/fleet.md);"
	@echo "                 HOSTS= also spreads flake-check, mutants and determinism-check"
	@echo "make hosts HOSTS=FILE  check that each host of a fleet answers"
	@echo "make bench       printk latency/throughput (virtual time), time to verdict, rig diff speed (+ check)"
	@echo "make bench-commands  what make demo and make test cost from a fresh clone (bench-cold: empty cache)"
	@echo "make bench-fleet  the scenario suite on one test host vs two, and what sending inputs costs"
	@echo "make bench-long-logs  rig parse/diff/report and a run's judging on 1 GB logs: time, peak memory"
	@echo "make determinism-check  golden scenarios 10 times: byte-identical evidence?"
	@echo "make clean       remove run directories;  make clean-cache  remove the build cache"
	@echo "make prune-cache [HOURS=168]  remove cache entries nothing used for that long"

deps:
	@sh rig/install-deps.sh $(PACKAGES)

kernel: deps
	@$(RIG) build kernel

qemu: deps
	@$(RIG) build qemu

initramfs: deps
	@$(RIG) build initramfs

series-check: deps
	@$(RIG) build series-check

# A fleet of libvirt hosts (docs/fleet.md): HOSTS=FILE runs the scenarios of
# these targets there, one pytest-xdist worker per slot of its hosts.
FLEET_ARGS = $(if $(HOSTS),--hosts $(abspath $(HOSTS)))

flake-check: build
	@$(RIG) flakes --runs 5 -- scenarios $(FLEET_ARGS) $(PYTEST_ARGS)

mutants: build
	@$(RIG) mutants -- scenarios $(FLEET_ARGS) $(PYTEST_ARGS)

scenarios: build
	@test -n "$(HOSTS)" || { echo "usage: make scenarios HOSTS=hosts.txt (docs/fleet.md)"; exit 2; }
	@$(PYTEST) -v $(FLEET_ARGS) scenarios $(PYTEST_ARGS)

hosts: deps
	@test -n "$(HOSTS)" || { echo "usage: make hosts HOSTS=hosts.txt (docs/fleet.md)"; exit 2; }
	@$(RIG) hosts --hosts $(HOSTS) --check

golden: build
	@$(RIG) golden -- $(PYTEST_ARGS)

replay: build
	@test -n "$(RUN)" || { echo "usage: make replay RUN=runs/<run directory> [GDB=1]"; exit 2; }
	@$(RIG) replay $(if $(GDB),--gdb) $(RUN)

# The libvirt backend's tests (and --backend libvirt) need libvirtd running.
libvirtd: deps
	@sh rig/start-libvirtd.sh

bench: build
	@$(RIG) bench --check --page docs/measurements

# What the README's two commands cost, from a fresh clone (docs/tools.md).
bench-commands: deps
	@$(RIG) bench --command "make demo" --page docs/measurements
	@$(RIG) bench --command "make test" --page docs/measurements

# The readers on 1 GB logs: time and peak memory (a part of make bench).
bench-long-logs: build
	@$(RIG) bench --long-logs --check --page docs/measurements

# The scenario suite on one test host and on two (network namespaces, root).
bench-fleet: build
	@$(RIG) bench --fleet --page docs/measurements

bench-cold: deps
	@$(RIG) bench --command "make demo" --cold --page docs/measurements
	@$(RIG) bench --command "make test" --cold --page docs/measurements

report: deps
	@$(RIG) report --junit $(or $(JUNIT),runs/junit.xml)

determinism-check: build
	@$(RIG) determinism --runs 10 -- scenarios $(FLEET_ARGS) $(PYTEST_ARGS)

build: deps
	@$(RIG) build kernel qemu initramfs

# Builds only what it boots: QEMU, the patched kernel and its initramfs.
demo: deps
	@$(RIG) demo

# pytest-xdist workers, one per core: boots on the icount clock run side by side,
# a real-time boot holds the host alone (rig/vm/hostshare.py). Each file's tests
# go to one worker (--dist loadfile), so tests of a file that make the same
# icount request judge one run (scenarios/conftest.py, SHARED_RUNS).
WORKERS ?= $(shell nproc)

# Every run leaves its results where CI reads them: JUnit XML, KTAP and JSON.
JUNIT ?= runs/junit.xml

test: build tools-check libvirtd
	@mkdir -p $(dir $(JUNIT)); rm -f $(JUNIT); status=0; \
	$(PYTEST) -v -n $(WORKERS) --dist loadfile --junitxml=$(JUNIT) $(PYTEST_ARGS) || status=$$?; \
	$(RIG) results $(JUNIT) || status=$$((status ? status : 2)); exit $$status

# The scenario suite on the other kernel profiles, both flavors, each
# profile's results in runs/profile-NAME/ (docs/profiles.md). A flavor in
# SMOKE_FLAVORS runs only S1 and the golden scenarios there: .ci/run sets
# SMOKE_FLAVORS=vanilla to keep a cold run within its budget; ONLY_FLAVOR=F
# builds and runs that flavor alone.
TEST_PROFILES ?= rt debug
SMOKE_FLAVORS ?=
ONLY_FLAVOR ?=

test-profiles: deps tools-check libvirtd
	@status=0; for p in $(TEST_PROFILES); do \
	  dir=runs/profile-$$p; mkdir -p $$dir; rm -f $$dir/junit.xml; \
	  echo "[test-profiles] profile $$p: building its kernels"; \
	  RIG_PROFILE=$$p $(RIG) build kernel qemu initramfs $(if $(ONLY_FLAVOR),--flavor $(ONLY_FLAVOR)) \
	    || { status=2; continue; }; \
	  echo "[test-profiles] profile $$p: the scenario suite"; rc=0; \
	  RIG_PROFILE=$$p $(PYTEST) -v -n $(WORKERS) --dist loadfile --junitxml=$$dir/junit.xml \
	    $(foreach f,$(SMOKE_FLAVORS),--smoke-flavor $(f)) $(if $(ONLY_FLAVOR),--flavor $(ONLY_FLAVOR)) \
	    scenarios $(PYTEST_ARGS) || rc=$$?; \
	  $(RIG) results $$dir/junit.xml || rc=$$((rc ? rc : 2)); \
	  if [ $$rc -ne 0 ] && [ $$status -eq 0 ]; then status=$$rc; fi; \
	done; exit $$status

unit: deps tools-check
	@$(PYTEST) -v rig/tests -m "not boots and not builds" $(PYTEST_ARGS)

# The uartlog decoder (C) and its unit tests.
tools-check: deps
	@$(MAKE) -s -C qemu-devices/tools check

clean:
	rm -rf runs .pytest_cache
	$(MAKE) -s -C qemu-devices/tools clean
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# Cache entries no build or boot used for HOURS (default a week).
prune-cache:
	@$(RIG) cache prune $(if $(HOURS),--unused-for $(HOURS))

clean-cache:
	rm -rf "$${RIG_CACHE:-$$HOME/.cache/printk-rig}"
