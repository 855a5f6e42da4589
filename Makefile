# pg_warp: PGXS build of the extension, the GPU fatbin and the command-line tools.
#
#   make                      extension (+ fatbin when nvcc is on the PATH) + tools
#   make install              into the PostgreSQL that pg_config names
#   make installcheck         pg_regress suites (test/sql) against a running server
#   make ASSERT=1             build with assertions (USE_ASSERT_CHECKING)
#   make WERROR=1             warnings are errors (CI and `make dev`; not a user's make,
#                             so that a newer compiler's new warning never breaks an install)
#   make dev                  the developers' build: ASSERT=1 WERROR=1
#   make NVCC=                build without GPU code even where nvcc exists
#   make CUDA_ARCHS="80 90"   the GPU architectures the fatbin has code for (default)

EXTENSION    = pg_warp
EXTVERSION   = 0.1.0

MODULE_big   = pg_warp
# The extension's sources by layer (doc/architecture.md, "Layers"), one per line: the
# top (main.c), arrow_fdw (src/fdw), the backend half of the engine
# (src/engine) and SQL types and aggregates (src/types).
OBJS         = \
	src/main.o \
	src/fdw/analyze.o \
	src/fdw/arrow_fdw.o \
	src/fdw/datum.o \
	src/fdw/engine_source.o \
	src/fdw/estimate.o \
	src/fdw/file.o \
	src/fdw/meta_image.o \
	src/fdw/meta_shared.o \
	src/fdw/import.o \
	src/fdw/options.o \
	src/fdw/plan.o \
	src/fdw/scan.o \
	src/fdw/stats.o \
	src/fdw/table.o \
	src/engine/codegen.o \
	src/engine/codegen_types.o \
	src/engine/device.o \
	src/engine/engine_scan.o \
	src/engine/executor.o \
	src/engine/explain_why.o \
	src/engine/filter.o \
	src/engine/gpu_join.o \
	src/engine/gpu_join_build.o \
	src/engine/gpu_join_part.o \
	src/engine/gpu_join_cache.o \
	src/engine/gpu_join_rows.o \
	src/engine/gpu_join_scan.o \
	src/engine/gpu_join_memfd.o \
	src/engine/gpu_join_table.o \
	src/engine/gpu_preagg.o \
	src/engine/gpu_preagg_plan.o \
	src/engine/heap_source.o \
	src/engine/preagg_aggs.o \
	src/engine/preagg_store.o \
	src/engine/preagg_values.o \
	src/engine/shippable.o \
	src/engine/shm_chunk.o \
	src/engine/gpuscan.o \
	src/engine/service_client.o \
	src/engine/gpu_cache_admin.o \
	src/engine/service_supervisor.o \
	src/types/float2.o \
	src/types/float2_ops.o \
	src/types/hll.o
DATA_built   = sql/$(EXTENSION)--$(EXTVERSION).sql
DATA         = $(filter-out $(DATA_built),$(wildcard sql/$(EXTENSION)--*--*.sql))

# The Arrow library (src/arrow, plain C) is linked as a static archive: only the
# objects the backend uses (the reader) end up in pg_warp.so.
ARROW_LIB    = src/arrow/libwarparrow.a
# The library's sources: the one explicit list in src/arrow/sources.mk, which
# tools/Makefile and test/c/Makefile include too.
include src/arrow/sources.mk
ARROW_SRCS   = $(addprefix src/arrow/,$(ARROW_SOURCES))
ARROW_OBJS   = $(ARROW_SRCS:.c=.o)

# The library exports only what PostgreSQL looks up: the magic block, _PG_init
# and the C functions that sql/pg_warp.sql names (with their pg_finfo_ records).
# Everything else (the Arrow library, our helpers) stays local to pg_warp.so.
EXPORTS      = src/exports.map

# init (CREATE EXTENSION) first, then every other suite: test/sql/NAME.sql, and
# test/input/NAME.source + test/output/NAME.source, which regress-prep converts into
# test/sql and test/expected (@abs_srcdir@: the test directory) after writing the
# Arrow fixtures into test/data/generated (doc/testing.md).  REGRESS_DIR=DIR runs
# the suites from a copy of test/ in DIR.
REGRESS_DIR ?= test
REGRESS      = init $(filter-out init,$(sort $(notdir $(basename $(wildcard test/sql/*.sql test/input/*.source)))))
REGRESS_OPTS = --inputdir=$(REGRESS_DIR) --outputdir=$(REGRESS_DIR) --load-extension=plpgsql
REGRESS_PREP = regress-prep

PG_CONFIG   ?= pg_config
PG_CPPFLAGS  = -I$(CURDIR)/src -I$(CURDIR)/src/arrow
PG_CFLAGS    = -std=gnu11 -Wall -Wextra -Wno-unused-parameter \
               -Wno-missing-field-initializers -Wno-sign-compare -MMD -MP
ifeq ($(ASSERT),1)
PG_CPPFLAGS += -DUSE_ASSERT_CHECKING
endif
ifeq ($(WERROR),1)
PG_CFLAGS   += -Werror
endif
SHLIB_LINK   = $(ARROW_LIB) $(XPU_LIB) -llz4 -lzstd -ldl -lpthread -Wl,--version-script=$(EXPORTS)

EXTRA_CLEAN  = $(FATBIN) tools/bin $(OBJS:.o=.d) $(ARROW_OBJS) $(ARROW_OBJS:.o=.d) \
               $(ARROW_LIB) $(EXPORTS)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# rebuild objects when a header they include changes (-MMD in PG_CFLAGS)
-include $(OBJS:.o=.d) $(ARROW_OBJS:.o=.d)

.PHONY: dev
dev:
	$(MAKE) ASSERT=1 WERROR=1

# the fast test tier (doc/testing.md): builds what changed, installs, runs the
# unit, library and layout tests; no cluster
.PHONY: check-fast
check-fast:
	bash scripts/test.sh --fast

.PHONY: regress-prep
regress-prep:
	python3 test/data/prepare_regress.py $(REGRESS_DIR)
EXTRA_CLEAN += $(wildcard test/data/generated test/data/generated.*) \
               $(patsubst test/input/%.source,test/sql/%.sql,$(wildcard test/input/*.source)) \
               $(patsubst test/output/%.source,test/expected/%.out,$(wildcard test/output/*.source))

$(ARROW_LIB): $(ARROW_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

# The xPU program builder/validator/disassembler and the CPU interpreter (src/xpu,
# plain C): a static archive, built with the extension's flags, for the backend
# to link once codegen uses it.
XPU_LIB      = src/xpu/libwarpxpu.a
XPU_C_OBJS   = src/xpu/xpu_agg.o src/xpu/xpu_build.o src/xpu/xpu_cpu.o \
               src/xpu/xpu_hll_sketch.o src/xpu/xpu_join.o src/xpu/xpu_join_scan.o
EXTRA_CLEAN += $(XPU_LIB) $(XPU_C_OBJS) $(XPU_C_OBJS:.o=.d)
-include $(XPU_C_OBJS:.o=.d)

$(shlib): $(XPU_LIB)

$(XPU_LIB): $(XPU_C_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(EXPORTS): sql/$(EXTENSION).sql Makefile
	{ echo '{ global: Pg_magic_func; _PG_init; pg_warp_supervisor_main; pg_warp_meta_prewarm_main;'; \
	  sed -n "s/.*'MODULE_PATHNAME', *'\([A-Za-z0-9_]*\)'.*/  \1; pg_finfo_\1;/p" $<; \
	  echo '  local: *; };'; } > $@

$(shlib): $(ARROW_LIB) $(EXPORTS)

sql/$(EXTENSION)--$(EXTVERSION).sql: sql/$(EXTENSION).sql
	sed 's/@EXTVERSION@/$(EXTVERSION)/g' $< > $@

# The GPU code: prebuilt into one fatbin (sm_80, sm_90 and PTX) installed beside
# the library.  Nothing is compiled at run time.  nvcc compiles kern_all.cu,
# which includes every kern_*.cu; it writes the headers it read to a
# dependency file (-MMD), so a changed header rebuilds the fatbin.
NVCC        ?= $(shell command -v nvcc 2>/dev/null)
FATBIN       = src/xpu/pg_warp.fatbin
XPU_SRCS     = \
	src/xpu/kern_all.cu \
	src/xpu/kern_selftest.cu \
	src/xpu/kern_warp.cu \
	src/xpu/kern_agg.cu \
	src/xpu/kern_heap.cu \
	src/xpu/kern_join_scan.cu
# CUDA_ARCHS: the GPUs' compute capabilities to build machine code for (the
# last one's PTX goes in too, for newer GPUs); nvcc compiles them in parallel
CUDA_ARCHS  ?= 80 90
NVCC_FLAGS   = -std=c++17 -O3 --fatbin --threads 0 -I$(CURDIR)/src/xpu -MMD -MP \
               $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
               -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))

ifneq ($(strip $(NVCC)),)
all: $(FATBIN)
install: install-fatbin
endif

$(FATBIN): $(XPU_SRCS)
	$(NVCC) $(NVCC_FLAGS) -MF $(FATBIN:.fatbin=.d) -o $@ src/xpu/kern_all.cu
EXTRA_CLEAN += $(FATBIN:.fatbin=.d)
-include $(FATBIN:.fatbin=.d)

.PHONY: install-fatbin tools install-tools
install-fatbin: $(FATBIN)
	$(INSTALL_DATA) $(FATBIN) '$(DESTDIR)$(pkglibdir)/$(EXTENSION).fatbin'

# Command-line tools (tools/Makefile): built with the extension, installed to bindir.
all: tools
install: install-tools
tools:
	$(MAKE) -C tools PG_CONFIG=$(PG_CONFIG) WERROR=$(WERROR)
install-tools: tools
	$(MAKE) -C tools PG_CONFIG=$(PG_CONFIG) WERROR=$(WERROR) install DESTDIR=$(DESTDIR)
clean: clean-tools
clean-tools:
	$(MAKE) -C tools clean

# The warp service (src/service, no postgres.h): a program of its own that the
# supervisor background worker starts (doc/service.md).  Installed beside
# pg_warp.so in pkglibdir, not in bindir: it is not a command for users, and it
# must match the library of the same install.
SERVICE      = src/service/pg_warp_service
SERVICE_SRCS = \
	src/service/agg.c \
	src/service/buf_cache.c \
	src/service/devices.c \
	src/service/file_map.c \
	src/service/file_meta.c \
	src/service/gpu.c \
	src/service/gpu_agg.c \
	src/service/gpu_direct.c \
	src/service/gpu_heap.c \
	src/service/gpu_input.c \
	src/service/gpu_mem.c \
	src/service/file_reg.c \
	src/service/gpu_cache.c \
	src/service/gpu_multi.c \
	src/service/gpu_scan.c \
	src/service/heap_chunk.c \
	src/service/input.c \
	src/service/join_counts.c \
	src/service/join_store.c \
	src/service/main.c \
	src/service/options.c \
	src/service/run.c \
	src/service/scan.c \
	src/service/server.c \
	src/service/share.c \
	src/service/threads.c \
	src/service/util.c
# the xPU sources the service compiles in (the CPU engine and its table)
SERVICE_XPU_SRCS = \
	src/xpu/xpu_agg.c \
	src/xpu/xpu_build.c \
	src/xpu/xpu_cpu.c \
	src/xpu/xpu_hll_sketch.c \
	src/xpu/xpu_join.c \
	src/xpu/xpu_join_scan.c
SERVICE_HDRS = \
	src/service/buf_cache.h \
	src/service/file_map.h \
	src/service/file_meta.h \
	src/service/gpu_cache.h \
	src/service/gpu_driver.h \
	src/service/input.h \
	src/service/join_store.h \
	src/service/run.h \
	src/service/service.h \
	src/service/share.h \
	src/service/threads.h \
	src/arrow/arrow.h \
	$(wildcard src/xpu/*.h)
# -O3: bench/cpu_engine_bench's engine time (one thread, SSB SF 1) about 13 % lower
# than at -O2 for both of engine_bench.py's queries (medians of six runs side by side
# on the 2-core development machine); on the 16-core H100 host the engine threads'
# time of engine_bench.py moved by under 2 % (bench/results/README.md, 2a7ae4d)
SERVICE_CFLAGS = -std=gnu11 -O3 -g -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
               -Wno-missing-field-initializers -Wno-sign-compare $(if $(filter 1,$(WERROR)),-Werror)
# one object per source under build/service (src/service/X.c -> build/service/service/X.o,
# src/xpu/X.c -> build/service/xpu/X.o: the service's own build of the xPU code), which
# test/python/test_layout.py reads to check what the service's files reference
SERVICE_OBJDIR = build/service
SERVICE_OBJS = $(patsubst src/%.c,$(SERVICE_OBJDIR)/%.o,$(SERVICE_SRCS) $(SERVICE_XPU_SRCS))
all: $(SERVICE)
install: install-service
clean: clean-service
$(SERVICE_OBJDIR)/%.o: src/%.c $(SERVICE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(SERVICE_CFLAGS) -pthread -I$(CURDIR)/src -I$(CURDIR)/src/xpu -MMD -MP -c -o $@ $<
-include $(SERVICE_OBJS:.o=.d)
$(SERVICE): $(SERVICE_OBJS) $(ARROW_LIB)
	$(CC) $(SERVICE_CFLAGS) -pthread -o $@ $(SERVICE_OBJS) $(ARROW_LIB) \
		-llz4 -lzstd -lm -ldl -lpthread
.PHONY: install-service clean-service
install-service: $(SERVICE) installdirs
	$(INSTALL_PROGRAM) $(SERVICE) '$(DESTDIR)$(pkglibdir)/pg_warp_service'
clean-service:
	rm -rf $(SERVICE) $(SERVICE_OBJDIR)
