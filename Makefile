# acceld: build, run, test, bench, fuzz and install.
#
#   make            build build/acceld
#   make run        install missing Debian packages, build, serve on 127.0.0.1:9470 (database var/acceld.db)
#   make test       install missing Debian packages, build, run unit and black-box tests
#   make test SANITIZE=address,undefined    the same, built with sanitizers (into build/sanitize)
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
PKGS       += libcurl # the GCE metadata server on TPU hosts (probe_tpu.c)
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
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -DCL_TARGET_OPENCL_VERSION=300 $(WARN) $(CFLAGS) $(PKG_CFLAGS) \
              -Isrc -DACCELD_VERSION='"$(VERSION)"' -MMD -MP -pthread
LDLIBS     := $(PKG_LIBS) -ldl -lm -pthread
# the accelerator table (db/accelerators.csv) is embedded at build time as a generated header
ALL_CFLAGS += -I$(BUILD)/gen
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS    += -fsanitize=$(SANITIZE)
endif

SRC        := $(sort $(wildcard src/*.c))
LIB_SRC    := $(filter-out src/main.c,$(SRC))
LIB_OBJ    := $(LIB_SRC:src/%.c=$(BUILD)/obj/%.o)
UNIT_SRC   := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
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

.PHONY: all deps test-deps run test unit bench install uninstall clean
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

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/obj/version.o: ALL_CFLAGS += -DACCELD_COMMIT='"$(GIT_COMMIT)"' -DACCELD_BUILD_TIME='"$(BUILD_TIME)"'
$(BUILD)/obj/version.o: .git/index $(wildcard .git/HEAD)
.git/index:

$(BUILD)/gen/accelerators_csv.h: db/accelerators.csv
	@mkdir -p $(@D)
	{ echo '/* generated from db/accelerators.csv; do not edit */'; \
	  echo 'static const char accelerators_csv[] = {'; \
	  od -An -v -tx1 $< | sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00};'; } > $@

$(BUILD)/obj/specs.o: $(BUILD)/gen/accelerators_csv.h

# the native kernels need -O3 for GCC to vectorise their loops; OpenBLAS is loaded at run time (exec_cpu.c)
$(BUILD)/obj/exec_cpu.o: ALL_CFLAGS += -O3

# the numbered schema migrations (db/migrations/NNNN_*.sql) are embedded into store.c the same way
MIGRATIONS := $(sort $(wildcard db/migrations/*.sql))
$(BUILD)/gen/migrations.h: $(MIGRATIONS) db/embed.sh
	@mkdir -p $(@D)
	sh db/embed.sh $(MIGRATIONS) > $@

$(BUILD)/obj/store.o: $(BUILD)/gen/migrations.h

# the dashboard (static/index.html) is embedded too, so the binary serves it from anywhere
$(BUILD)/gen/static_index_html.h: static/index.html
	@mkdir -p $(@D)
	{ echo '/* generated from static/index.html; do not edit */'; \
	  echo 'static const unsigned char static_index_html[] = {'; \
	  od -An -v -tx1 $< | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '};'; } > $@

$(BUILD)/obj/api_static.o: $(BUILD)/gen/static_index_html.h

$(BUILD)/libacceld.a: $(LIB_OBJ)
	@rm -f $@
	$(call say,AR,$@)ar rcs $@ $^

$(BUILD)/acceld: $(BUILD)/obj/main.o $(BUILD)/libacceld.a
	$(call say,LINK,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) -Itests/unit $(shell pkg-config --cflags check) -c $< -o $@

$(BUILD)/tests/test_%: $(BUILD)/tests/test_%.o $(BUILD)/tests/check_main.o $(BUILD)/libacceld.a
	$(call say,LINK,$@)$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs check) $(LDLIBS)

$(BUILD)/fakes/lib%.so: tests/fakes/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) -fPIC -shared -o $@ $<

run: deps
	@$(MAKE) --no-print-directory all
	@mkdir -p var
	$(BUILD)/acceld serve --db var/acceld.db $(ARGS)

unit: $(UNIT_BIN) $(FAKE_LIB)

test: test-deps
	@$(MAKE) --no-print-directory all unit
	@ACCELD_BIN=$(BUILD)/acceld ACCELD_BUILD=$(BUILD) python3 tests/run.py

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

-include $(LIB_OBJ:.o=.d) $(BUILD)/obj/main.d $(UNIT_BIN:%=%.d)

# libFuzzer harnesses (tests/fuzz/fuzz_*.c) built with clang, ASan and UBSan; each runs FUZZ_SECONDS with its
# seed corpus tests/fuzz/corpus/<name>/ (new finds go to build/fuzz/corpus/<name>/, not into the repo).
FUZZ_SECONDS ?= 60
FUZZ_SRC     := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN     := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -DCL_TARGET_OPENCL_VERSION=300 -g -O1 -Isrc -Ibuild/fuzz/gen \
                $(PKG_CFLAGS) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
.PHONY: fuzz fuzz-build
.SECONDARY: build/fuzz/gen/accelerators_csv.h build/fuzz/gen/migrations.h build/fuzz/gen/static_index_html.h

build/fuzz/%: tests/fuzz/%.c $(LIB_SRC) build/fuzz/gen/accelerators_csv.h build/fuzz/gen/migrations.h \
             build/fuzz/gen/static_index_html.h
	@mkdir -p $(@D)
	$(call say,FUZZ,$<)clang $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRC) $(LDLIBS)

build/fuzz/gen/%.h:
	@$(MAKE) --no-print-directory BUILD=build/fuzz $@

fuzz-build: deps
	@command -v clang >/dev/null || { sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	    $$sudo apt-get install -y -qq --no-install-recommends clang libclang-rt-dev; }
	@$(MAKE) --no-print-directory $(FUZZ_BIN)

fuzz: fuzz-build
	@for f in $(FUZZ_BIN); do n=$${f##*/fuzz_}; mkdir -p build/fuzz/corpus/$$n; \
	    echo "== $$f ($(FUZZ_SECONDS) s)"; \
	    $$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -artifact_prefix=build/fuzz/ \
	        build/fuzz/corpus/$$n tests/fuzz/corpus/$$n \
	        2>build/fuzz/$$n.log || { tail -40 build/fuzz/$$n.log; exit 1; }; \
	    grep -E '^#[0-9]+.*DONE' build/fuzz/$$n.log | tail -1; done
