# pg_warp: PGXS build of the extension, the GPU fatbin and the command-line tools.
#
#   make                      extension (+ fatbin when nvcc is on the PATH) + tools
#   make install              into the PostgreSQL that pg_config names
#   make installcheck         pg_regress suites (test/sql) against a running server
#   make ASSERT=1             build with assertions (USE_ASSERT_CHECKING)
#   make NVCC=                build without GPU code even where nvcc exists

EXTENSION    = pg_warp
EXTVERSION   = 0.1.0

MODULE_big   = pg_warp
ARROW_SRCS   = $(sort $(wildcard src/arrow/*.c))
OBJS         = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)) $(ARROW_SRCS))
DATA_built   = sql/$(EXTENSION)--$(EXTVERSION).sql
DATA         = $(filter-out $(DATA_built),$(wildcard sql/$(EXTENSION)--*--*.sql))

# init (CREATE EXTENSION) first, then every other suite in test/sql
REGRESS      = init $(filter-out init,$(sort $(notdir $(basename $(wildcard test/sql/*.sql)))))
REGRESS_OPTS = --inputdir=test --outputdir=test --load-extension=plpgsql

PG_CONFIG   ?= pg_config
PG_CPPFLAGS  = -I$(CURDIR)/src -I$(CURDIR)/src/arrow
PG_CFLAGS    = -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
               -Wno-missing-field-initializers -Wno-sign-compare -MMD -MP
ifeq ($(ASSERT),1)
PG_CPPFLAGS += -DUSE_ASSERT_CHECKING
endif
SHLIB_LINK   = -llz4 -lzstd -ldl -lpthread

EXTRA_CLEAN  = $(FATBIN) tools/bin $(OBJS:.o=.d)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# rebuild objects when a header they include changes (-MMD in PG_CFLAGS)
-include $(OBJS:.o=.d)

sql/$(EXTENSION)--$(EXTVERSION).sql: sql/$(EXTENSION).sql
	sed 's/@EXTVERSION@/$(EXTVERSION)/g' $< > $@

# The GPU code: prebuilt into one fatbin (sm_80, sm_90 and PTX) installed beside
# the library.  Nothing is compiled at run time.
NVCC        ?= $(shell command -v nvcc 2>/dev/null)
FATBIN       = src/xpu/pg_warp.fatbin
XPU_SRCS     = $(wildcard src/xpu/*.cu)
XPU_HDRS     = $(wildcard src/xpu/*.h)
NVCC_FLAGS   = -std=c++17 -O3 --fatbin -I$(CURDIR)/src/xpu \
               -gencode arch=compute_80,code=sm_80 \
               -gencode arch=compute_90,code=sm_90 \
               -gencode arch=compute_90,code=compute_90

ifneq ($(strip $(NVCC)),)
ifneq ($(strip $(XPU_SRCS)),)
all: $(FATBIN)
install: install-fatbin
endif
endif

$(FATBIN): src/xpu/kern_all.cu $(XPU_SRCS) $(XPU_HDRS)
	$(NVCC) $(NVCC_FLAGS) -o $@ $<

.PHONY: install-fatbin tools install-tools
install-fatbin: $(FATBIN)
	$(INSTALL_DATA) $(FATBIN) '$(DESTDIR)$(pkglibdir)/$(EXTENSION).fatbin'

# Command-line tools (tools/Makefile): built with the extension, installed to bindir.
all: tools
install: install-tools
tools:
	$(MAKE) -C tools PG_CONFIG=$(PG_CONFIG)
install-tools: tools
	$(MAKE) -C tools PG_CONFIG=$(PG_CONFIG) install DESTDIR=$(DESTDIR)
clean: clean-tools
clean-tools:
	$(MAKE) -C tools clean
