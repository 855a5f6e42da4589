/*-------------------------------------------------------------------------
 *
 * xpu_join_scan.c
 *		The host's halves of GpuJoin's split projection run
 *		(xpu_join_scan.h): the GPU kernel's work compiled for the host
 *		(xpu_join_scan_exec: the stand-in GPU and the checks compare with
 *		it) and the replay of the passing rows into the program's outputs
 *		(xpu_join_scan_project: the service's workers, scan.c).  Plain C,
 *		no PostgreSQL headers.
 *
 *-------------------------------------------------------------------------
 */
#include "xpu_join_scan.h"

/*
 * xpu_join_scan_exec: kern_join_scan_exec's work over every row of chunk,
 * on this thread: mask[r] and rows[p * chunk->nrows + r], the rows entering
 * each depth added to probes (NULL: not counted); the first error in err,
 * whose code it returns
 */
int
xpu_join_scan_exec(const XpuProgram *prog, const XpuChunk *chunk, uint8_t *mask,
				   int32_t *rows, uint64_t *probes, XpuError *err)
{
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		nulls[XPU_MAX_REGS];

	for (int64_t r = 0; r < chunk->nrows && err->code == XPU_OK; r++)
		xpu_join_scan_row(prog, chunk, r, regs, nulls, mask, rows, chunk->nrows, probes, err);
	return err->code;
}

/*
 * xpu_join_scan_project: the outputs of rows row0 .. row0 + n - 1 of
 * chunk (one batch: its cols at offset 0; mask and rows as the GPU wrote
 * them for the batch's nrows rows) into values/nulls at [k * n + i]: a
 * passing row's by the replay, the others NULL.  Returns err's code; a
 * passing row the replay does not pass is an internal error.
 */
int
xpu_join_scan_project(const XpuProgram *prog, const XpuChunk *chunk, const uint8_t *mask,
					  const int32_t *rows, int64_t nrows, int64_t row0, int64_t n,
					  XpuValue *values, uint8_t *nulls, XpuError *err)
{
	const uint8_t *outs = XPU_OUTS(prog);
	int			n_probes = xpu_join_scan_probes(prog);
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		rn[XPU_MAX_REGS];
	int32_t		probe_rows[XPU_MAX_REGS];

	for (int64_t i = 0; i < n && err->code == XPU_OK; i++)
	{
		int64_t		row = row0 + i;
		int			k;

		if (!mask[row])
		{
			for (k = 0; k < prog->n_outs; k++)
				nulls[k * n + i] = 1;
			continue;
		}
		for (int p = 0; p < n_probes; p++)
			probe_rows[p] = rows[(int64_t) p * nrows + row];
		if (!xpu_join_scan_replay(prog, chunk, chunk->cols, row, probe_rows, regs, rn, err))
		{
			if (err->code == XPU_OK)
				XPU_ERROR(err, XPU_ERR_INTERNAL, "a row the GPU joined does not pass on the host");
			break;
		}
		for (k = 0; k < prog->n_outs; k++)
		{
			values[k * n + i] = regs[outs[k]];
			nulls[k * n + i] = rn[outs[k]];
		}
	}
	return err->code;
}
