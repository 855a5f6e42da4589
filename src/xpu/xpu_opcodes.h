/*-------------------------------------------------------------------------
 *
 * xpu_opcodes.h
 *		The one table of xPU opcodes, as an X-macro.  Host code expands it
 *		into the opcode enum, the validator's type table and the
 *		disassembler (xpu_build.c); device and CPU code into the
 *		interpreter's switch (xpu_interp.h).  A new opcode is one line here
 *		plus its xpu_step_NAME() body in its type family's header.
 *
 * XPU_OP(NAME, KIND, NARGS, RESULT, ARG1, ARG2, ARG3, FORM)
 *
 *	KIND	VAL: strict; a NULL argument makes the result NULL and the step
 *			is not called.  NS: not strict; the step sees the null flags.
 *			MASK: changes the active mask; the interpreter runs it itself.
 *	NARGS	registers read (a, b, c of the instruction, in that order)
 *	RESULT	type of the destination register (NONE: no destination)
 *	ARGn	type of each argument register (xpu_types.h: XPU_T_<name>);
 *			the pseudo types DST (same type and scale as the destination),
 *			ARG1 (same as argument a), ANY and INTLIKE (a type stored in
 *			the int64 slot: bool, int2/4/8, date, time, timestamp[tz]).
 *	FORM	readable form for EXPLAIN VERBOSE: $d $a $b $c are registers,
 *			$k the immediate or the constant it points to.
 *
 * Immediates (XpuInstr.imm): CONST_* / IN_* / LIKE_* take a byte offset
 * into the constants pool (CONST_F2: the half's 16 bits themselves);
 * LOAD_COL's imm is a column descriptor index;
 * DATE_PART_TS, DATE_TRUNC_TS, DATE_TRUNC_TSTZ, EXTRACT_TS, EXTRACT_DATE,
 * DATE_PART_IV and EXTRACT_IV take an
 * XpuDateField (xpu_date_field_ok says which each accepts; EXTRACT_*'s
 * destination scale is xpu_extract_scale's); CONST_BOOL its value;
 * CONST_IV an offset to an XpuInterval.
 *
 * JOIN_PROBE: imm = depth | (n_keys << 8), n_keys 1..3 key registers a, b,
 * c (the fields beyond n_keys repeat a); dst = the row number of the first
 * inner row of XpuChunk.joins[depth] whose keys equal them, NULL when none
 * does or a key is NULL; with XPU_JOIN_PROBE_EACH (1 << 16) in imm, each
 * matching row in turn (rows expand: xpu_join.h).  JOIN_PAY: imm = depth | (col << 8); dst = payload
 * column col of inner row a of joins[depth] (a text points into the table).
 * Forms: $j the depth, $K the key registers, $p the payload column.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_OPCODES_H
#define XPU_OPCODES_H

#define XPU_OPCODE_TABLE(X) \
	/* control: conditional evaluation under the active mask */ \
	X(MASK_PUSH_TRUE,     MASK, 1, NONE, BOOL, NONE, NONE, "where $a is true:") \
	X(MASK_PUSH_NOT_TRUE, MASK, 1, NONE, BOOL, NONE, NONE, "where $a is not true:") \
	X(MASK_PUSH_NOT_FALSE, MASK, 1, NONE, BOOL, NONE, NONE, "where $a is not false:") \
	X(MASK_PUSH_NULL,     MASK, 1, NONE, ANY, NONE, NONE, "where $a is null:") \
	X(MASK_POP,           MASK, 0, NONE, NONE, NONE, NONE, "end") \
	/* loads and constants */ \
	X(LOAD_COL,   NS, 0, ANY, NONE, NONE, NONE, "$d = column $k") \
	X(CONST_NULL, NS, 0, ANY, NONE, NONE, NONE, "$d = NULL") \
	X(CONST_BOOL, NS, 0, BOOL, NONE, NONE, NONE, "$d = $k") \
	X(CONST_INT,  NS, 0, INTLIKE, NONE, NONE, NONE, "$d = $k") \
	X(CONST_F2,   NS, 0, FLOAT2, NONE, NONE, NONE, "$d = $k") \
	X(CONST_F4,   NS, 0, FLOAT4, NONE, NONE, NONE, "$d = $k") \
	X(CONST_F8,   NS, 0, FLOAT8, NONE, NONE, NONE, "$d = $k") \
	X(CONST_NUM,  NS, 0, NUMERIC, NONE, NONE, NONE, "$d = $k") \
	X(CONST_TEXT, NS, 0, TEXT, NONE, NONE, NONE, "$d = $k") \
	X(CONST_IV,   NS, 0, INTERVAL, NONE, NONE, NONE, "$d = $k") \
	/* generic: moves, CASE / COALESCE / NULLIF merges, null tests */ \
	X(MOVE,        NS, 1, ANY, DST, NONE, NONE, "$d = $a") \
	X(SELECT,      NS, 3, ANY, BOOL, DST, DST, "$d = CASE WHEN $a THEN $b ELSE $c END") \
	X(COALESCE,    NS, 2, ANY, DST, DST, NONE, "$d = COALESCE($a, $b)") \
	X(NULLIF,      NS, 2, ANY, DST, BOOL, NONE, "$d = CASE WHEN $b THEN NULL ELSE $a END") \
	X(IS_NULL,     NS, 1, BOOL, ANY, NONE, NONE, "$d = $a IS NULL") \
	X(IS_NOT_NULL, NS, 1, BOOL, ANY, NONE, NONE, "$d = $a IS NOT NULL") \
	/* bool: three-valued logic */ \
	X(AND,          NS, 2, BOOL, BOOL, BOOL, NONE, "$d = $a AND $b") \
	X(OR,           NS, 2, BOOL, BOOL, BOOL, NONE, "$d = $a OR $b") \
	X(NOT,          VAL, 1, BOOL, BOOL, NONE, NONE, "$d = NOT $a") \
	X(IS_TRUE,      NS, 1, BOOL, BOOL, NONE, NONE, "$d = $a IS TRUE") \
	X(IS_NOT_TRUE,  NS, 1, BOOL, BOOL, NONE, NONE, "$d = $a IS NOT TRUE") \
	X(IS_FALSE,     NS, 1, BOOL, BOOL, NONE, NONE, "$d = $a IS FALSE") \
	X(IS_NOT_FALSE, NS, 1, BOOL, BOOL, NONE, NONE, "$d = $a IS NOT FALSE") \
	X(BOOL_TO_I4,   VAL, 1, INT4, BOOL, NONE, NONE, "$d = $a::int4") \
	X(I4_TO_BOOL,   VAL, 1, BOOL, INT4, NONE, NONE, "$d = $a::bool") \
	/* comparisons of integer-like values of one type */ \
	X(EQ_INT, VAL, 2, BOOL, INTLIKE, ARG1, NONE, "$d = $a = $b") \
	X(NE_INT, VAL, 2, BOOL, INTLIKE, ARG1, NONE, "$d = $a <> $b") \
	X(LT_INT, VAL, 2, BOOL, INTLIKE, ARG1, NONE, "$d = $a < $b") \
	X(LE_INT, VAL, 2, BOOL, INTLIKE, ARG1, NONE, "$d = $a <= $b") \
	X(GT_INT, VAL, 2, BOOL, INTLIKE, ARG1, NONE, "$d = $a > $b") \
	X(GE_INT, VAL, 2, BOOL, INTLIKE, ARG1, NONE, "$d = $a >= $b") \
	X(IN_INT, VAL, 1, BOOL, INTLIKE, NONE, NONE, "$d = $a IN $k") \
	/* int2 / int4 / int8 arithmetic */ \
	XPU_INT_OPS(X, I2, INT2, "int2") \
	XPU_INT_OPS(X, I4, INT4, "int4") \
	XPU_INT_OPS(X, I8, INT8, "int8") \
	X(I2_TO_I4, VAL, 1, INT4, INT2, NONE, NONE, "$d = $a::int4") \
	X(I2_TO_I8, VAL, 1, INT8, INT2, NONE, NONE, "$d = $a::int8") \
	X(I4_TO_I2, VAL, 1, INT2, INT4, NONE, NONE, "$d = $a::int2") \
	X(I4_TO_I8, VAL, 1, INT8, INT4, NONE, NONE, "$d = $a::int8") \
	X(I8_TO_I2, VAL, 1, INT2, INT8, NONE, NONE, "$d = $a::int2") \
	X(I8_TO_I4, VAL, 1, INT4, INT8, NONE, NONE, "$d = $a::int4") \
	/* float4 / float8 */ \
	XPU_FLOAT_OPS(X, F4, FLOAT4, "float4") \
	XPU_FLOAT_OPS(X, F8, FLOAT8, "float8") \
	X(IN_F8,    VAL, 1, BOOL, FLOAT8, NONE, NONE, "$d = $a IN $k") \
	X(I8_TO_F4, VAL, 1, FLOAT4, INT8, NONE, NONE, "$d = $a::float4") \
	X(I8_TO_F8, VAL, 1, FLOAT8, INT8, NONE, NONE, "$d = $a::float8") \
	X(F4_TO_F8, VAL, 1, FLOAT8, FLOAT4, NONE, NONE, "$d = $a::float8") \
	X(F8_TO_F4, VAL, 1, FLOAT4, FLOAT8, NONE, NONE, "$d = $a::float4") \
	X(F4_TO_I2, VAL, 1, INT2, FLOAT4, NONE, NONE, "$d = $a::int2") \
	X(F4_TO_I4, VAL, 1, INT4, FLOAT4, NONE, NONE, "$d = $a::int4") \
	X(F4_TO_I8, VAL, 1, INT8, FLOAT4, NONE, NONE, "$d = $a::int8") \
	X(F8_TO_I2, VAL, 1, INT2, FLOAT8, NONE, NONE, "$d = $a::int2") \
	X(F8_TO_I4, VAL, 1, INT4, FLOAT8, NONE, NONE, "$d = $a::int4") \
	X(F8_TO_I8, VAL, 1, INT8, FLOAT8, NONE, NONE, "$d = $a::int8") \
	/* float2 (pg_warp's binary16): computed in float4, rounded to a half */ \
	XPU_FLOAT_OPS(X, F2, FLOAT2, "float2") \
	X(F2_TO_F4, VAL, 1, FLOAT4, FLOAT2, NONE, NONE, "$d = $a::float4") \
	X(F2_TO_F8, VAL, 1, FLOAT8, FLOAT2, NONE, NONE, "$d = $a::float8") \
	X(F4_TO_F2, VAL, 1, FLOAT2, FLOAT4, NONE, NONE, "$d = $a::float2") \
	X(F8_TO_F2, VAL, 1, FLOAT2, FLOAT8, NONE, NONE, "$d = $a::float2") \
	X(I8_TO_F2, VAL, 1, FLOAT2, INT8, NONE, NONE, "$d = $a::float2") \
	/* numeric: int128 fixed point, the scale is the register's */ \
	X(ADD_NUM, VAL, 2, NUMERIC, NUMERIC, NUMERIC, NONE, "$d = $a + $b") \
	X(SUB_NUM, VAL, 2, NUMERIC, NUMERIC, NUMERIC, NONE, "$d = $a - $b") \
	X(MUL_NUM, VAL, 2, NUMERIC, NUMERIC, NUMERIC, NONE, "$d = $a * $b") \
	X(MOD_NUM, VAL, 2, NUMERIC, NUMERIC, NUMERIC, NONE, "$d = $a % $b") \
	X(NEG_NUM, VAL, 1, NUMERIC, DST, NONE, NONE, "$d = -$a") \
	X(ABS_NUM, VAL, 1, NUMERIC, DST, NONE, NONE, "$d = abs($a)") \
	X(EQ_NUM,  VAL, 2, BOOL, NUMERIC, NUMERIC, NONE, "$d = $a = $b") \
	X(NE_NUM,  VAL, 2, BOOL, NUMERIC, NUMERIC, NONE, "$d = $a <> $b") \
	X(LT_NUM,  VAL, 2, BOOL, NUMERIC, NUMERIC, NONE, "$d = $a < $b") \
	X(LE_NUM,  VAL, 2, BOOL, NUMERIC, NUMERIC, NONE, "$d = $a <= $b") \
	X(GT_NUM,  VAL, 2, BOOL, NUMERIC, NUMERIC, NONE, "$d = $a > $b") \
	X(GE_NUM,  VAL, 2, BOOL, NUMERIC, NUMERIC, NONE, "$d = $a >= $b") \
	X(NUM_RESCALE, VAL, 1, NUMERIC, NUMERIC, NONE, NONE, "$d = round($a, scale of $d)") \
	X(I8_TO_NUM, VAL, 1, NUMERIC, INT8, NONE, NONE, "$d = $a::numeric") \
	X(NUM_TO_I2, VAL, 1, INT2, NUMERIC, NONE, NONE, "$d = $a::int2") \
	X(NUM_TO_I4, VAL, 1, INT4, NUMERIC, NONE, NONE, "$d = $a::int4") \
	X(NUM_TO_I8, VAL, 1, INT8, NUMERIC, NONE, NONE, "$d = $a::int8") \
	/* text (C collation) */ \
	X(EQ_TEXT, VAL, 2, BOOL, TEXT, TEXT, NONE, "$d = $a = $b") \
	X(NE_TEXT, VAL, 2, BOOL, TEXT, TEXT, NONE, "$d = $a <> $b") \
	X(LT_TEXT, VAL, 2, BOOL, TEXT, TEXT, NONE, "$d = $a < $b") \
	X(LE_TEXT, VAL, 2, BOOL, TEXT, TEXT, NONE, "$d = $a <= $b") \
	X(GT_TEXT, VAL, 2, BOOL, TEXT, TEXT, NONE, "$d = $a > $b") \
	X(GE_TEXT, VAL, 2, BOOL, TEXT, TEXT, NONE, "$d = $a >= $b") \
	X(IN_TEXT, VAL, 1, BOOL, TEXT, NONE, NONE, "$d = $a IN $k") \
	X(LIKE_EXACT,  VAL, 1, BOOL, TEXT, NONE, NONE, "$d = $a LIKE $k") \
	X(LIKE_PREFIX, VAL, 1, BOOL, TEXT, NONE, NONE, "$d = $a LIKE $k || '%'") \
	X(LIKE_SUFFIX, VAL, 1, BOOL, TEXT, NONE, NONE, "$d = $a LIKE '%' || $k") \
	X(LIKE_INFIX,  VAL, 1, BOOL, TEXT, NONE, NONE, "$d = $a LIKE '%' || $k || '%'") \
	X(LIKE_MATCH,  VAL, 1, BOOL, TEXT, NONE, NONE, "$d = $a LIKE $k") \
	X(ILIKE_MATCH, VAL, 1, BOOL, TEXT, NONE, NONE, "$d = $a ILIKE $k (ASCII case folding)") \
	X(LENGTH_TEXT, VAL, 1, INT4, TEXT, NONE, NONE, "$d = length($a)") \
	X(SUBSTR_FROM, VAL, 2, TEXT, TEXT, INT4, NONE, "$d = substring($a from $b)") \
	X(SUBSTR_FOR,  VAL, 3, TEXT, TEXT, INT4, INT4, "$d = substring($a from $b for $c)") \
	/* date / timestamp */ \
	X(DATE_PL_INT, VAL, 2, DATE, DATE, INT4, NONE, "$d = $a + $b") \
	X(DATE_MI_INT, VAL, 2, DATE, DATE, INT4, NONE, "$d = $a - $b") \
	X(DATE_MI_DATE, VAL, 2, INT4, DATE, DATE, NONE, "$d = $a - $b") \
	X(DATE_TO_TS,  VAL, 1, TIMESTAMP, DATE, NONE, NONE, "$d = $a::timestamp") \
	X(TS_TO_DATE,  VAL, 1, DATE, TIMESTAMP, NONE, NONE, "$d = $a::date") \
	X(DATE_PART_TS, VAL, 1, FLOAT8, TIMESTAMP, NONE, NONE, "$d = date_part($k, $a)") \
	X(DATE_TRUNC_TS, VAL, 1, TIMESTAMP, TIMESTAMP, NONE, NONE, "$d = date_trunc($k, $a)") \
	X(EXTRACT_TS, VAL, 1, NUMERIC, TIMESTAMP, NONE, NONE, "$d = extract($k from $a)") \
	X(EXTRACT_DATE, VAL, 1, NUMERIC, DATE, NONE, NONE, "$d = extract($k from $a)") \
	X(DATE_CMP_TS, VAL, 1, TIMESTAMP, DATE, NONE, NONE, "$d = $a::timestamp (to compare)") \
	X(DATE_TO_TSTZ, VAL, 2, TIMESTAMPTZ, DATE, INT8, NONE, "$d = $a::timestamptz (zone offset $b)") \
	X(DATE_TRUNC_TSTZ, VAL, 2, TIMESTAMPTZ, TIMESTAMPTZ, INT8, NONE, "$d = date_trunc($k, $a) (zone offset $b)") \
	/* interval */ \
	X(EQ_IV, VAL, 2, BOOL, INTERVAL, INTERVAL, NONE, "$d = $a = $b") \
	X(NE_IV, VAL, 2, BOOL, INTERVAL, INTERVAL, NONE, "$d = $a <> $b") \
	X(LT_IV, VAL, 2, BOOL, INTERVAL, INTERVAL, NONE, "$d = $a < $b") \
	X(LE_IV, VAL, 2, BOOL, INTERVAL, INTERVAL, NONE, "$d = $a <= $b") \
	X(GT_IV, VAL, 2, BOOL, INTERVAL, INTERVAL, NONE, "$d = $a > $b") \
	X(GE_IV, VAL, 2, BOOL, INTERVAL, INTERVAL, NONE, "$d = $a >= $b") \
	X(TS_PL_IV, VAL, 2, TIMESTAMP, TIMESTAMP, INTERVAL, NONE, "$d = $a + $b") \
	X(TS_MI_IV, VAL, 2, TIMESTAMP, TIMESTAMP, INTERVAL, NONE, "$d = $a - $b") \
	X(TS_MI_TS, VAL, 2, INTERVAL, TIMESTAMP, TIMESTAMP, NONE, "$d = $a - $b") \
	X(TSTZ_PL_IV, VAL, 2, TIMESTAMPTZ, TIMESTAMPTZ, INTERVAL, NONE, "$d = $a + $b") \
	X(TSTZ_MI_IV, VAL, 2, TIMESTAMPTZ, TIMESTAMPTZ, INTERVAL, NONE, "$d = $a - $b") \
	X(TSTZ_MI_TSTZ, VAL, 2, INTERVAL, TIMESTAMPTZ, TIMESTAMPTZ, NONE, "$d = $a - $b") \
	X(ADD_IV, VAL, 2, INTERVAL, INTERVAL, INTERVAL, NONE, "$d = $a + $b") \
	X(SUB_IV, VAL, 2, INTERVAL, INTERVAL, INTERVAL, NONE, "$d = $a - $b") \
	X(NEG_IV, VAL, 1, INTERVAL, INTERVAL, NONE, NONE, "$d = -$a") \
	X(DATE_PART_IV, VAL, 1, FLOAT8, INTERVAL, NONE, NONE, "$d = date_part($k, $a)") \
	X(EXTRACT_IV, VAL, 1, NUMERIC, INTERVAL, NONE, NONE, "$d = extract($k from $a)") \
	/* the JOIN stage: inner tables of XpuChunk.joins (xpu_join.h) */ \
	X(JOIN_PROBE, NS, 3, INT8, ANY, ANY, ANY, "$d = join $j probe ($K)") \
	X(JOIN_PAY,   VAL, 1, ANY, INT8, NONE, NONE, "$d = join $j column $p of $a")

/* arithmetic of one integer width W (I2, I4, I8) on type T */
#define XPU_INT_OPS(X, W, T, NAME) \
	X(ADD_##W, VAL, 2, T, T, T, NONE, "$d = $a + $b") \
	X(SUB_##W, VAL, 2, T, T, T, NONE, "$d = $a - $b") \
	X(MUL_##W, VAL, 2, T, T, T, NONE, "$d = $a * $b") \
	X(DIV_##W, VAL, 2, T, T, T, NONE, "$d = $a / $b") \
	X(MOD_##W, VAL, 2, T, T, T, NONE, "$d = $a % $b") \
	X(NEG_##W, VAL, 1, T, T, NONE, NONE, "$d = -$a") \
	X(ABS_##W, VAL, 1, T, T, NONE, NONE, "$d = abs($a)")

/* arithmetic and comparisons of one float width W (F2, F4, F8) on type T */
#define XPU_FLOAT_OPS(X, W, T, NAME) \
	X(ADD_##W, VAL, 2, T, T, T, NONE, "$d = $a + $b") \
	X(SUB_##W, VAL, 2, T, T, T, NONE, "$d = $a - $b") \
	X(MUL_##W, VAL, 2, T, T, T, NONE, "$d = $a * $b") \
	X(DIV_##W, VAL, 2, T, T, T, NONE, "$d = $a / $b") \
	X(NEG_##W, VAL, 1, T, T, NONE, NONE, "$d = -$a") \
	X(ABS_##W, VAL, 1, T, T, NONE, NONE, "$d = abs($a)") \
	X(EQ_##W, VAL, 2, BOOL, T, T, NONE, "$d = $a = $b") \
	X(NE_##W, VAL, 2, BOOL, T, T, NONE, "$d = $a <> $b") \
	X(LT_##W, VAL, 2, BOOL, T, T, NONE, "$d = $a < $b") \
	X(LE_##W, VAL, 2, BOOL, T, T, NONE, "$d = $a <= $b") \
	X(GT_##W, VAL, 2, BOOL, T, T, NONE, "$d = $a > $b") \
	X(GE_##W, VAL, 2, BOOL, T, T, NONE, "$d = $a >= $b")

/* the opcode enum: XPU_OP_<NAME> */
typedef enum XpuOpcode
{
#define XPU_OPCODE_ENUM(NAME, KIND, NARGS, R, A1, A2, A3, FORM) XPU_OP_##NAME,
	XPU_OPCODE_TABLE(XPU_OPCODE_ENUM)
#undef XPU_OPCODE_ENUM
	XPU_N_OPCODES
} XpuOpcode;

#endif							/* XPU_OPCODES_H */
