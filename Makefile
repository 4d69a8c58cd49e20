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
PKGS       := libmicrohttpd jansson hwloc OpenCL sqlite3 openblas
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

# Debian 12 packages the build, the tests and `make run` need; `make deps` installs the missing ones.
DEB_PKGS   := make gcc libc6-dev pkg-config libmicrohttpd-dev libjansson-dev libhwloc-dev ocl-icd-opencl-dev \
              opencl-c-headers pocl-opencl-icd libsqlite3-dev check libopenblas-dev python3 curl

.PHONY: all deps run test unit http-tests bench install uninstall clean
.DELETE_ON_ERROR:

all: $(BUILD)/acceld

deps:
	@missing=$$(for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${db:Status-Status}' $$p 2>/dev/null | grep -qx installed || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	    echo "deps: installing $$missing"; \
	    $$sudo apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

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

$(BUILD)/libacceld.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/acceld: $(BUILD)/obj/main.o $(BUILD)/libacceld.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/unit $(shell pkg-config --cflags check) -c $< -o $@

$(BUILD)/tests/test_%: $(BUILD)/tests/test_%.o $(BUILD)/tests/check_main.o $(BUILD)/libacceld.a
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs check) $(LDLIBS)

$(BUILD)/fakes/lib%.so: tests/fakes/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -shared -o $@ $<

run: deps
	@$(MAKE) --no-print-directory all
	@mkdir -p var
	$(BUILD)/acceld serve --db var/acceld.db $(ARGS)

unit: $(UNIT_BIN) $(FAKE_LIB)

test: deps
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
