# acceld: build, run, test, bench, fuzz and install.
#
#   make            build build/acceld
#   make run        install missing Debian packages, build, serve on 127.0.0.1:9470 (database var/acceld.db)
#   make test       install missing Debian packages, build, run unit and black-box tests
#   make test SANITIZE=address,undefined    the same, built with sanitizers (into build/sanitize)
#   make test-sanitize  the sanitizer run CI affords: every unit test and a subset of the black-box tests
#   make bench      side-by-side benchmarks against peers (see bench/README.md)
#   make install    PREFIX=/usr/local DESTDIR=

VERSION    := 0.1.0
PREFIX     ?= /usr/local
DESTDIR    ?=
SANITIZE   ?=
WERROR     ?= 1

ifeq ($(SANITIZE),)
BUILD      ?= build
else
BUILD      ?= build/sanitize
endif

CC         ?= cc
V          ?= 0
ifeq ($(V),0)
say         = @printf '  %-6s %s\n' $(1) $(2);
else
say         =
endif
PKGS       := libmicrohttpd jansson hwloc OpenCL sqlite3
PKGS       += libcurl # the cloud metadata services (imds.c: GCE, EC2 IMDSv2, Azure IMDS)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN       := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
              -Wold-style-definition -Wvla -Wformat=2 -Wundef -Wcast-qual -Wpointer-arith
ifeq ($(WERROR),1)
WARN       += -Werror
endif

GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
BUILD_TIME := $(shell date -u -d @$${SOURCE_DATE_EPOCH:-$$(date +%s)} +%Y-%m-%dT%H:%M:%SZ)

CFLAGS     ?= -O2 -g
# what every compile of src/ shares, the build's and the fuzzers' alike
DEFINES    := -std=c11 -D_GNU_SOURCE -DCL_TARGET_OPENCL_VERSION=300 -DACCELD_VERSION='"$(VERSION)"' -Isrc
ALL_CFLAGS := $(DEFINES) $(WARN) $(CFLAGS) $(PKG_CFLAGS) -MMD -MP -pthread
LDLIBS     := $(PKG_LIBS) -ldl -lm -pthread
# the accelerator and price tables (db/*.csv, db/prices/*.csv) are embedded at build time as generated headers
ALL_CFLAGS += -I$(BUILD)/gen
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS    += -fsanitize=$(SANITIZE)
endif

# src/ is grouped by subsystem (README.md, "Source layout"); every .c below it is built, tests/unit mirrors it
SRC        := $(sort $(shell find src -name '*.c'))
LIB_SRC    := $(filter-out src/main.c,$(SRC))
LIB_OBJ    := $(LIB_SRC:src/%.c=$(BUILD)/obj/%.o)
UNIT_SRC   := $(sort $(shell find tests/unit -name 'test_*.c'))
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# fixtures the tests of one folder share (tests/unit/store/check_store.c): linked into that folder's test binaries
UNIT_FIX   := $(sort $(shell find tests/unit -mindepth 2 -name 'check_*.c'))
UNIT_FIX_OBJ := $(UNIT_FIX:tests/unit/%.c=$(BUILD)/tests/%.o)
FAKE_SRC   := $(sort $(wildcard tests/fakes/*.c))
FAKE_LIB   := $(FAKE_SRC:tests/fakes/%.c=$(BUILD)/fakes/lib%.so)

# Debian 12 packages: DEB_PKGS for the build and `make run` (`make deps`), TEST_DEB_PKGS on top for `make test`
# (`make test-deps`). Missing ones are installed with apt-get, through sudo when not root.
DEB_PKGS   := make gcc libc6-dev pkg-config libmicrohttpd-dev libjansson-dev libhwloc-dev ocl-icd-opencl-dev \
              opencl-c-headers pocl-opencl-icd libsqlite3-dev libopenblas-dev curl
DEB_PKGS   += libcurl4-openssl-dev
TEST_DEB_PKGS := check python3 chromium
# deployment checks (tests/deploy): promtool for /metrics, yamllint, shellcheck, systemd-analyze
TEST_DEB_PKGS += prometheus yamllint shellcheck systemd
# memcheck over a start-serve-stop cycle (tests/http/test_exposure_valgrind.py, suppressions in tests/valgrind.supp)
TEST_DEB_PKGS += valgrind
# the sources of a decimal-comma locale (de_DE), compiled into a temporary folder by tests/http/test_hostile_env.py
TEST_DEB_PKGS += locales
# answers checked against the contract's schemas (tests/http/test_contract.py)
TEST_DEB_PKGS += python3-jsonschema
# the tests run on Debian's python3, the one whose modules test-deps installs (a python3 earlier on PATH, from pyenv
# or a virtual environment, may lack them)
PYTHON     := /usr/bin/python3

# libFuzzer harnesses (tests/fuzz/fuzz_*.c), built with clang, ASan, UBSan and the build's warnings ($(WARN)) against
# the library compiled the same way ($(BUILD)/fuzz). `make fuzz` runs each for FUZZ_SECONDS over its seed corpus
# tests/fuzz/corpus/<name>/ (new finds go to $(BUILD)/fuzz/corpus/<name>/, not into the repo); `make test` runs each
# for FUZZ_TEST_SECONDS.
FUZZ_SECONDS ?= 60
FUZZ_TEST_SECONDS ?= 10
# the harnesses are built with ASan and UBSan whatever SANITIZE says, so a sanitizer build shares the plain one's
FUZZ_DIR     := $(patsubst %/sanitize,%,$(BUILD))/fuzz
FUZZ_SRC     := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN     := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_DIR)/%)
FUZZ_OBJ     := $(LIB_SRC:src/%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_FLAGS   := $(DEFINES) $(WARN) -g -O1 -I$(FUZZ_DIR)/gen $(PKG_CFLAGS) -pthread -fno-sanitize-recover=all
FUZZ_DEB_PKGS := clang libclang-rt-dev
TEST_DEB_PKGS += $(FUZZ_DEB_PKGS)

# the OpenAPI linter (Redocly CLI, pinned in tests/contract/package-lock.json) that tests/http/test_contract.py runs:
# Node.js and npm from Debian unless a node and an npm are already on PATH (they may come from elsewhere), then
# `npm ci` whenever the lock file is newer than the installed tree
NODE_DEB_PKGS := nodejs npm
CONTRACT_LINT := tests/contract/node_modules/.package-lock.json

.PHONY: all deps test-deps node-deps run test test-sanitize unit fuzz-bins bench install uninstall clean
.DELETE_ON_ERROR:

all: $(BUILD)/acceld

define install_missing
	@missing=$$(for p in $(1); do \
	    dpkg-query -W -f='$${db:Status-Status}' $$p 2>/dev/null | grep -qx installed || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	    echo "deps: installing" $$missing; \
	    $$sudo apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PKGS))

test-deps:
	$(call install_missing,$(DEB_PKGS) $(TEST_DEB_PKGS))
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	    $(MAKE) --no-print-directory node-deps; fi
	@$(MAKE) --no-print-directory -s $(CONTRACT_LINT)

node-deps:
	$(call install_missing,$(NODE_DEB_PKGS))

$(CONTRACT_LINT): tests/contract/package.json tests/contract/package-lock.json
	cd tests/contract && npm ci --no-audit --no-fund --ignore-scripts
	@touch $@

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/obj/core/version.o: ALL_CFLAGS += -DACCELD_COMMIT='"$(GIT_COMMIT)"' -DACCELD_BUILD_TIME='"$(BUILD_TIME)"'
$(BUILD)/obj/core/version.o: .git/index $(wildcard .git/HEAD)
.git/index:

# Data files built into the binary, so a user needs no file beside it: the spec table (db/accelerators.csv), the
# price tables (db/prices/*.csv) and the dashboard (static/index.html) become generated headers, each a
# NUL-terminated byte array (unsigned: the page holds UTF-8) named after the file (accelerators_csv, aws_csv,
# static_index_html; its length is sizeof - 1).
$(BUILD)/gen/%.h:
	@mkdir -p $(@D)
	{ echo '/* generated from $(firstword $^); do not edit */'; \
	  echo 'static const unsigned char $*[] = {'; \
	  od -An -v -tx1 $(firstword $^) | sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00};'; } > $@

$(BUILD)/gen/accelerators_csv.h: db/accelerators.csv
$(BUILD)/gen/aws_csv.h: db/prices/aws.csv
$(BUILD)/gen/azure_csv.h: db/prices/azure.csv
$(BUILD)/gen/gce_shapes_csv.h: db/prices/gce_shapes.csv
$(BUILD)/gen/gce_rates_csv.h: db/prices/gce_rates.csv
$(BUILD)/gen/gce_gpus_csv.h: db/prices/gce_gpus.csv
$(BUILD)/gen/tpu_chips_csv.h: db/prices/tpu_chips.csv
$(BUILD)/gen/sources_csv.h: db/prices/sources.csv
$(BUILD)/gen/regions_csv.h: db/prices/regions.csv
$(BUILD)/gen/static_index_html.h: static/index.html

$(BUILD)/obj/detect/specs.o: $(BUILD)/gen/accelerators_csv.h
$(BUILD)/obj/cost/machines.o: $(BUILD)/gen/aws_csv.h $(BUILD)/gen/azure_csv.h $(BUILD)/gen/gce_shapes_csv.h
$(BUILD)/obj/cost/pricebook.o: $(BUILD)/gen/gce_rates_csv.h $(BUILD)/gen/gce_gpus_csv.h $(BUILD)/gen/tpu_chips_csv.h \
			       $(BUILD)/gen/sources_csv.h
$(BUILD)/obj/cost/regions.o: $(BUILD)/gen/regions_csv.h
$(BUILD)/obj/api/api_static.o: $(BUILD)/gen/static_index_html.h

# the native kernels need -O3 for GCC to vectorise their loops; OpenBLAS is loaded at run time (exec_cpu.c)
$(BUILD)/obj/exec/backend/exec_cpu.o: ALL_CFLAGS += -O3

# the numbered schema migrations (db/migrations/NNNN_*.sql) are embedded into store.c the same way
MIGRATIONS := $(sort $(wildcard db/migrations/*.sql))
$(BUILD)/gen/migrations.h: $(MIGRATIONS) db/embed.sh
	@mkdir -p $(@D)
	sh db/embed.sh $(MIGRATIONS) > $@

$(BUILD)/obj/store/store_db.o: $(BUILD)/gen/migrations.h

$(BUILD)/libacceld.a: $(LIB_OBJ)
	@rm -f $@
	$(call say,AR,$@)ar rcs $@ $^

$(BUILD)/acceld: $(BUILD)/obj/main.o $(BUILD)/libacceld.a
	$(call say,LINK,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) -Itests/unit $(shell pkg-config --cflags check) -c $< -o $@

# check_api.o: hand-built requests and a service context for the handler tests (tests/unit/check_api.h)
$(UNIT_BIN): $(BUILD)/tests/%: $(BUILD)/tests/%.o $(BUILD)/tests/check_main.o $(BUILD)/tests/check_api.o \
		       $(BUILD)/libacceld.a
	$(call say,LINK,$@)$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(shell pkg-config --libs check) \
	    $(LDLIBS)
$(foreach o,$(UNIT_FIX_OBJ),$(eval $(filter $(dir $(o))test_%,$(UNIT_BIN)): $(o)))

$(BUILD)/fakes/lib%.so: tests/fakes/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) -fPIC -shared -o $@ $<

run: deps
	@$(MAKE) --no-print-directory all
	@mkdir -p var
	$(BUILD)/acceld serve --db var/acceld.db $(ARGS)

unit: $(UNIT_BIN) $(FAKE_LIB)

fuzz-bins: $(FUZZ_BIN)

# the build before the tests uses every CPU unless make was given -j itself
comma      := ,
NPROC      := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
test: test-deps
	@$(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(NPROC)) all unit fuzz-bins
	@ACCELD_BIN=$(BUILD)/acceld ACCELD_BUILD=$(BUILD) ACCELD_FUZZ_DIR=$(FUZZ_DIR) \
	    FUZZ_SECONDS=$(FUZZ_TEST_SECONDS) $(PYTHON) tests/run.py

# What CI (.ci/run) runs under ASan and UBSan after `make test`, as the whole suite twice does not fit its 10
# minutes on two cores: every unit test and the black-box files that drive the most of the binary's code in the
# least time. Left out: the fuzzers (built with both sanitizers anyway, they ran in `make test`), the health checks'
# sustained runs (test_check, a minute under ASan), the timing-bound exposure and fault tests, the metadata
# services (fuzzed too), the dashboard, the contract and the deployment files.
SANITIZE_TESTS ?= unit/ http/test_foundation http/test_hostile http/test_run_api http/test_select_api \
                  http/test_cost_api http/test_history_api http/test_metrics_api http/test_batch_api \
                  http/test_devices http/test_cli http/test_exposure_valgrind http/test_store_faults http/test_pjrt \
                  http/test_crash
empty      :=
test-sanitize:
	@$(MAKE) --no-print-directory test SANITIZE=address,undefined \
	    TESTS=$(subst $(empty) $(empty),$(comma),$(strip $(SANITIZE_TESTS)))

bench: deps
	@$(MAKE) --no-print-directory all
	@bench/run.sh $(BUILD)/acceld

install: $(BUILD)/acceld
	install -D -m 0755 $(BUILD)/acceld $(DESTDIR)$(PREFIX)/bin/acceld
	install -d $(DESTDIR)$(PREFIX)/share/acceld/static
	cp -R static/. $(DESTDIR)$(PREFIX)/share/acceld/static/
	install -D -m 0644 api/openapi.yaml $(DESTDIR)$(PREFIX)/share/acceld/openapi.yaml

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/acceld
	rm -rf $(DESTDIR)$(PREFIX)/share/acceld

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(BUILD)/obj/main.d $(UNIT_BIN:%=%.d) $(BUILD)/tests/check_api.d $(UNIT_FIX_OBJ:.o=.d) \
	    $(FAKE_LIB:.so=.d)

# the libFuzzer harnesses (variables above)
.PHONY: fuzz fuzz-build

$(FUZZ_DIR)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(call say,FUZZCC,$<)clang $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@

$(FUZZ_DIR)/obj/detect/specs.o: $(FUZZ_DIR)/gen/accelerators_csv.h
$(FUZZ_DIR)/obj/cost/machines.o: $(FUZZ_DIR)/gen/aws_csv.h $(FUZZ_DIR)/gen/azure_csv.h $(FUZZ_DIR)/gen/gce_shapes_csv.h
$(FUZZ_DIR)/obj/cost/pricebook.o: $(FUZZ_DIR)/gen/gce_rates_csv.h $(FUZZ_DIR)/gen/gce_gpus_csv.h \
				  $(FUZZ_DIR)/gen/tpu_chips_csv.h $(FUZZ_DIR)/gen/sources_csv.h
$(FUZZ_DIR)/obj/cost/regions.o: $(FUZZ_DIR)/gen/regions_csv.h
$(FUZZ_DIR)/obj/store/store_db.o: $(FUZZ_DIR)/gen/migrations.h
$(FUZZ_DIR)/obj/api/api_static.o: $(FUZZ_DIR)/gen/static_index_html.h

$(FUZZ_DIR)/gen/%.h:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_DIR) $@

# regenerated when their sources change, like the build's own copies
$(FUZZ_DIR)/gen/migrations.h: $(MIGRATIONS) db/embed.sh
$(FUZZ_DIR)/gen/accelerators_csv.h: db/accelerators.csv
$(FUZZ_DIR)/gen/aws_csv.h: db/prices/aws.csv
$(FUZZ_DIR)/gen/azure_csv.h: db/prices/azure.csv
$(FUZZ_DIR)/gen/gce_shapes_csv.h: db/prices/gce_shapes.csv
$(FUZZ_DIR)/gen/gce_rates_csv.h: db/prices/gce_rates.csv
$(FUZZ_DIR)/gen/gce_gpus_csv.h: db/prices/gce_gpus.csv
$(FUZZ_DIR)/gen/tpu_chips_csv.h: db/prices/tpu_chips.csv
$(FUZZ_DIR)/gen/sources_csv.h: db/prices/sources.csv
$(FUZZ_DIR)/gen/regions_csv.h: db/prices/regions.csv
$(FUZZ_DIR)/gen/static_index_html.h: static/index.html

$(FUZZ_DIR)/libacceld.a: $(FUZZ_OBJ)
	@rm -f $@
	$(call say,AR,$@)ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DIR)/libacceld.a
	$(call say,FUZZ,$<)clang $(FUZZ_FLAGS) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)

-include $(FUZZ_OBJ:.o=.d)

fuzz-build:
	$(call install_missing,$(DEB_PKGS) $(FUZZ_DEB_PKGS))
	@$(MAKE) --no-print-directory $(FUZZ_BIN)

fuzz: fuzz-build
	@ACCELD_FUZZ_DIR=$(FUZZ_DIR) FUZZ_SECONDS=$(FUZZ_SECONDS) $(PYTHON) tests/run.py --fuzz-only
