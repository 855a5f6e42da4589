/*-------------------------------------------------------------------------
 *
 * xpu_types.h
 *		The value types of xPU registers and the 16-byte register slot that
 *		holds one value of any of them.  Plain data, shared by the GPU
 *		kernels, the CPU engine and the host.
 *
 * How each type is held (PostgreSQL's own representations):
 *	bool, int2, int4, int8		v.i (sign-extended int64; bool is 0 or 1)
 *	date						v.i: int32 days since 2000-01-01, with
 *								DATEVAL_NOBEGIN/NOEND (INT32_MIN/MAX) as
 *								-infinity/+infinity
 *	time, timestamp[tz]			v.i: int64 microseconds (since 2000-01-01 for
 *								timestamps; INT64_MIN/MAX are -/+infinity)
 *	float4, float8				v.f4 / v.f8
 *	float2 (pg_warp's)			v.i: the 16 bits of the IEEE 754 binary16 value
 *								(xpu_half.h converts them)
 *	numeric						v.n: int128 scaled by 10^scale, where scale is
 *								the register's (XpuReg.scale)
 *	text						v.t: pointer + byte length (not terminated)
 *	interval					v.iv: months, days, microseconds
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_TYPES_H
#define XPU_TYPES_H

#include "xpu_common.h"

/* register value types; the pseudo types (after XPU_T_N_TYPES) only appear
 * in the opcode table's type columns */
typedef enum XpuType
{
	XPU_T_NONE = 0,
	XPU_T_BOOL,
	XPU_T_INT2,
	XPU_T_INT4,
	XPU_T_INT8,
	XPU_T_FLOAT4,
	XPU_T_FLOAT8,
	XPU_T_NUMERIC,
	XPU_T_DATE,
	XPU_T_TIME,
	XPU_T_TIMESTAMP,
	XPU_T_TIMESTAMPTZ,
	XPU_T_INTERVAL,
	XPU_T_TEXT,
	XPU_T_FLOAT2,
	XPU_T_N_TYPES,
	/* pseudo types of the opcode table */
	XPU_T_ANY,
	XPU_T_DST,
	XPU_T_ARG1,
	XPU_T_INTLIKE
} XpuType;

/* the largest scale a numeric register may have (38 decimal digits) */
#define XPU_NUMERIC_MAX_SCALE	38

typedef struct XpuText
{
	const char *p;
	int32_t		len;
} XpuText;

typedef struct XpuInterval
{
	int64_t		us;
	int32_t		days;
	int32_t		months;
} XpuInterval;

/* one register slot: 16 bytes, 16-byte aligned for the int128 */
typedef union XpuValue
{
	int64_t		i;
	float		f4;
	double		f8;
	__int128	n;
	XpuText		t;
	XpuInterval iv;
} XpuValue;

/* PostgreSQL's date/time constants that the xPU code needs */
#define XPU_DATEVAL_NOBEGIN		INT32_MIN
#define XPU_DATEVAL_NOEND		INT32_MAX
#define XPU_DT_NOBEGIN			INT64_MIN
#define XPU_DT_NOEND			INT64_MAX
#define XPU_USECS_PER_DAY		INT64_C(86400000000)
#define XPU_USECS_PER_SEC		INT64_C(1000000)
#define XPU_POSTGRES_EPOCH_JDATE	2451545		/* Julian day of 2000-01-01 */
#define XPU_UNIX_EPOCH_DAYS		10957		/* 2000-01-01 - 1970-01-01 */
/* valid dates: [-2451545, 2147483494 - 2451545), as IS_VALID_DATE */
#define XPU_DATE_MIN			(-XPU_POSTGRES_EPOCH_JDATE)
#define XPU_DATE_END			(2147483494 - XPU_POSTGRES_EPOCH_JDATE)
/* valid timestamps: [MIN_TIMESTAMP, END_TIMESTAMP), as IS_VALID_TIMESTAMP */
#define XPU_TIMESTAMP_MIN		INT64_C(-211813488000000000)
#define XPU_TIMESTAMP_END		INT64_C(9223371331200000000)

#endif							/* XPU_TYPES_H */
