/*-------------------------------------------------------------------------
 *
 * input.h
 *		What the service's runs over Arrow files share (input.c): the first
 *		failure of a run, the files of a request (parsed, opened with their
 *		identity checked, their fields checked against the program) and
 *		which Arrow field a program column may read.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_SERVICE_INPUT_H
#define PG_WARP_SERVICE_INPUT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "arrow/arrow.h"
#include "xpu/protocol.h"
#include "xpu/xpu_program.h"

/*
 * SvcFailure: the first failure of a run (its WarpErrorCode and message)
 * and the flag that tells the run's workers to stop.  The first svc_fail
 * wins; the others only set stop again.
 */
typedef struct SvcFailure
{
	pthread_mutex_t lock;
	uint32_t	werr;			/* WarpErrorCode; 0: no failure */
	char		msg[248];
	int			stop;			/* atomic: workers stop claiming work */
} SvcFailure;

extern void svc_failure_init(SvcFailure *f);
extern void svc_failure_destroy(SvcFailure *f);
extern void svc_fail(SvcFailure *f, WarpErrorCode code, const char *fmt, ...)
			__attribute__((format(printf, 3, 4)));
extern void svc_fail_arrow(SvcFailure *f, const char *path, const ArrowError *err);
extern bool svc_stopping(SvcFailure *f, const volatile int *canceled);
extern uint32_t svc_failure_reply(const SvcFailure *f, bool canceled, uint8_t *buf);
extern void svc_add_counter(uint64_t *c, uint64_t v);

/*
 * SvcInputFile: one file of an AGG_RUN or SCAN_RUN (a WarpAggFile part of
 * the request, xpu/protocol.h).  The pointers into the request stay valid
 * while the run's copy of the payload lives; fd and file are the run's.
 */
typedef struct SvcInputFile
{
	char	   *path;
	int			fd;				/* open, identity checked (O_RDONLY); -1 */
	struct ArrowFile *file;		/* its footer and schema, opened over fd */
	uint32_t	n_batches;
	const int32_t *batches;		/* record batch numbers to read */
	const int32_t *fields;		/* chunk column j -> top-level field */
	const WarpAggFile *wf;		/* its part of the request */
	ArrowSource src;			/* what file reads through (fd) */
	struct SvcFileMap *map;		/* the file mapped (file_map.c), or NULL */
	void	   *meta;			/* the kept metadata file points into (file_meta.c) */
	bool		meta_image;		/* its batches' metadata read from their image */
} SvcInputFile;

extern const void *svc_take(const uint8_t *p, size_t len, size_t *off, size_t n,
							size_t align);
extern bool svc_input_parse(SvcInputFile *f, uint32_t i, const uint8_t *p, size_t len,
							size_t *off, uint32_t n_cols, const char *what,
							char *msg, size_t msglen);
extern bool svc_input_open(SvcInputFile *f, int64_t max_buffer_size, bool map,
						   SvcFailure *fail);
extern bool svc_input_check_end(const SvcInputFile *f, SvcFailure *fail);
extern bool svc_input_check(const SvcInputFile *f, const XpuProgram *prog, uint32_t n_cols,
							SvcFailure *fail);
extern void svc_input_close(SvcInputFile *f);
extern uint64_t svc_input_batch_bytes(const SvcInputFile *f, int32_t batch, const bool *want);
extern void svc_input_bind(const SvcInputFile *f, const XpuProgram *prog,
						   const ArrowBatch *batch, XpuColumnData *cols);
extern bool svc_field_fits(const ArrowField *fld, const XpuColumn *col, int *width);
extern bool svc_field_fits_cpu(const ArrowField *fld, const XpuColumn *col, int *width);
extern bool svc_input_has_dict(const SvcInputFile *f, const XpuProgram *prog);

#endif							/* PG_WARP_SERVICE_INPUT_H */
