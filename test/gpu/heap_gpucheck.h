/*
 * heap_gpucheck.h
 *		What heap_gpucheck.c and heap_gpucheck_units.c (its checks of the
 *		units of WARP_HEAP_UNITS) share: the table's attributes, a case's
 *		rows, the ring of chunks, a query's program and its queries, a run
 *		and its outcome, the comparison with the CPU engine's groups, the
 *		GPU and the stand-in driver's counters.  tap.h counts the checks in
 *		static variables, one set a translation unit: heap_gpucheck_units.c
 *		prints its TAP lines through heap_tap_ok and heap_tap_diag, which
 *		count them with heap_gpucheck.c's.
 */
#ifndef HEAP_GPUCHECK_H
#define HEAP_GPUCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "service/service.h"
#include "xpu/xpu_agg.h"
#include "xpu/xpu_program.h"

/* attributes 1 .. N_ATTS: a = index + 1 */
enum
{
	A_K, A_DROPPED, A_S, A_B, A_V, A_F4, A_F8, A_N, A_DT, A_TS, A_T, A_H, A_M, N_ATTS
};

/* how a case's rows look */
typedef struct Gen
{
	int64_t		n_rows;
	int			n_groups;
	int			null_pct;
	int			vis_mod;		/* tuple t of page p is visible unless (7p + t) % vis_mod == 0 (0: all) */
	int			damage;			/* 0, or which FALLBACK to plant (DMG_*) */
} Gen;

/* the chunk ring of a run, in a sealed memfd as the backend's */
typedef struct Ring
{
	int			fd;
	uint8_t    *base;
	size_t		size;
	uint32_t	n_slots;
	uint32_t	slot_pages;
	uint64_t	slot_size;
	uint32_t   *slot_n_pages;	/* pages of each filled slot */
	int64_t		visible;		/* the visible tuples */
} Ring;

/* a program over q's attributes; chunk column j holds attribute col_att[j] - 1 */
typedef struct Built
{
	XpuProgram *prog;
	uint16_t	key_outs[4];
	XpuAggDesc	aggs[16];
	XpuAggSpec	spec;
	int16_t		col_att[N_ATTS];
	int			n_cols;
} Built;

enum
{
	ENG_CPU, ENG_GPU, ENG_EMU
};

typedef struct Outcome
{
	int			rc;
	int			werr;
	XpuError	err;
	char		msg[256];
	XpuAggTable *table;
	uint32_t	threads;
	AggRun		run;
	double		secs;
} Outcome;

/* heap_gpucheck.c's queries[] and their programs */
#define Q_BY_K		0
#define Q_BY_TEXT	1
#define Q_BY_DATE	2
#define Q_NO_GROUP	3

extern Built built[4];

/* in heap_gpucheck.c */
extern uint64_t rng;			/* rnd's state: the rows ring_build makes next */
extern const ServiceGpu *the_gpu;
extern int *fake_unit_allocs;	/* fake_cuda.c's fake_unit_host_allocs, _watch and _copies */
extern int *fake_unit_watch;
extern int *fake_unit_copies;

extern void ring_build(Ring *r, const Gen *g, uint32_t slot_pages);
extern void ring_free(Ring *r);
extern size_t heap_request(const Built *bq, const Ring *r, uint8_t *buf);
extern void exec_run(int engine, const Built *bq, HeapRun *h, const ServiceGpu *gpu,
					 Outcome *o);
extern void run_engine(int engine, const Built *bq, Ring *r, int cancel_after_us, Outcome *o);
extern int	tables_same(const Built *bq, const XpuAggTable *gpu, const XpuAggTable *cpu,
						char *why);
extern int	heap_tap_ok(int cond, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
extern void heap_tap_diag(const char *fmt,...)
			__attribute__((format(printf, 1, 2)));

/* in heap_gpucheck_units.c */
extern void check_units(void);
extern void check_unit_reads(const char *cufile);
extern void check_unit_reads_pinned(void);
extern void check_unit_buffers(void);

#endif							/* HEAP_GPUCHECK_H */
