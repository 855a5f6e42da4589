/*
 * test_types.c
 *		Unit tests of the table of Arrow types (arrow_types.c): every
 *		ArrowTypeId has a row; the widths and alignments are those of the
 *		Arrow columnar format (checked against the C types that hold the
 *		values); the buffer counts, offsets and children agree with the
 *		layout; the names and Schema.fbs members survive a write and a read
 *		of every writable scalar type; the value readers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arrow_types.h"
#include "tap.h"

/* Value layouts of the Arrow columnar format, as C structs */
typedef struct
{
	int32_t		days;
	int32_t		msecs;
} IntervalDT;
typedef struct
{
	int32_t		months;
	int32_t		days;
	int64_t		nanos;
} IntervalMDN;

/* What the spec says of one fixed-width type: value bits, C alignment */
typedef struct
{
	ArrowTypeId id;
	int			bits;
	int			align;
} Fixed;

#define FIXED(id, ctype) {ARROW_TYPE_##id, 8 * (int) sizeof(ctype), (int) _Alignof(ctype)}

static const Fixed fixed[] = {
	FIXED(INT8, int8_t), FIXED(INT16, int16_t), FIXED(INT32, int32_t),
	FIXED(INT64, int64_t), FIXED(UINT8, uint8_t), FIXED(UINT16, uint16_t),
	FIXED(UINT32, uint32_t), FIXED(UINT64, uint64_t),
	FIXED(FLOAT16, uint16_t), FIXED(FLOAT32, float), FIXED(FLOAT64, double),
	/* decimals: little-endian 64-bit words */
	{ARROW_TYPE_DECIMAL128, 128, (int) _Alignof(uint64_t)},
	{ARROW_TYPE_DECIMAL256, 256, (int) _Alignof(uint64_t)},
	FIXED(DATE32, int32_t), FIXED(DATE64, int64_t),
	FIXED(TIME32, int32_t), FIXED(TIME64, int64_t),
	FIXED(TIMESTAMP, int64_t), FIXED(DURATION, int64_t),
	FIXED(INTERVAL_YM, int32_t), FIXED(INTERVAL_DT, IntervalDT),
	FIXED(INTERVAL_MDN, IntervalMDN),
};

/* Every id has its own row, with a unique name and a Schema.fbs member */
static void
test_rows(void)
{
	int			bad = 0;

	for (int id = ARROW_TYPE_FIRST; id <= ARROW_TYPE_LAST; id++)
	{
		const ArrowTypeInfo *info = arrow_type_info(id);

		if (info == NULL || info->id != (ArrowTypeId) id || info->name == NULL ||
			info->fb_type == 0)
		{
			tap_diag("type id %d: no complete row", id);
			bad++;
			continue;
		}
		for (int other = ARROW_TYPE_FIRST; other < id; other++)
		{
			if (strcmp(arrow_type_info(other)->name, info->name) == 0)
			{
				tap_diag("types %d and %d are both named %s", other, id, info->name);
				bad++;
			}
		}
	}
	tap_ok(bad == 0, "every type id from %d to %d has a row with a unique name (%d bad)",
		   ARROW_TYPE_FIRST, ARROW_TYPE_LAST, bad);
	tap_ok(arrow_type_info(0) == NULL && arrow_type_info(ARROW_TYPE_LAST + 1) == NULL,
		   "ids outside the enum have no row");
	/* the last enumerator is ARROW_TYPE_LAST: a new type must extend the table */
	tap_ok(ARROW_TYPE_LAST == ARROW_TYPE_MAP && ARROW_TYPE_FIRST == 1,
		   "ARROW_TYPE_FIRST..ARROW_TYPE_LAST spans the enum");
}

/* Widths and alignments of the fixed-width types, as the spec says */
static void
test_widths(void)
{
	int			n_fixed = 0;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
	{
		const ArrowTypeInfo *info = arrow_type_info(fixed[i].id);
		ArrowType	t = {.id = fixed[i].id};

		tap_ok(info->layout == ARROW_LAYOUT_FIXED && info->bit_width == fixed[i].bits &&
			   info->alignment == fixed[i].align &&
			   arrow_type_value_width(&t) == fixed[i].bits / 8,
			   "%s: fixed width, %d bits, aligned to %d bytes", info->name,
			   fixed[i].bits, fixed[i].align);
	}
	for (int id = ARROW_TYPE_FIRST; id <= ARROW_TYPE_LAST; id++)
		n_fixed += arrow_type_info(id)->layout == ARROW_LAYOUT_FIXED;
	/* the listed ones and FIXED_SIZE_BINARY, whose width is its parameter */
	tap_ok(n_fixed == (int) (sizeof(fixed) / sizeof(fixed[0])) + 1,
		   "every fixed-width type is checked (%d)", n_fixed);
	{
		ArrowType	fsb = {.id = ARROW_TYPE_FIXED_SIZE_BINARY, .byte_width = 7};
		ArrowType	b = {.id = ARROW_TYPE_BOOL};

		tap_ok(arrow_type_value_width(&fsb) == 7 &&
			   arrow_type_info(fsb.id)->bit_width == 0 &&
			   arrow_type_info(fsb.id)->alignment == 1,
			   "fixed_size_binary: width from byte_width, byte aligned");
		tap_ok(arrow_type_info(b.id)->bit_width == 1 && arrow_type_value_width(&b) == 0,
			   "bool: one bit a value, no byte width");
	}
}

/* Buffers, offsets and children follow from the layout (Columnar.rst) */
static void
test_layouts(void)
{
	for (int id = ARROW_TYPE_FIRST; id <= ARROW_TYPE_LAST; id++)
	{
		const ArrowTypeInfo *info = arrow_type_info(id);
		int			buffers;
		int			children = 0;
		bool		offsets = false;
		ArrowField	f = {.name = "x", .type = {.id = id}};

		switch (info->layout)
		{
			case ARROW_LAYOUT_NULL:
			case ARROW_LAYOUT_RUN_END:
				buffers = 0;
				children = info->layout == ARROW_LAYOUT_RUN_END ? 2 : 0;
				break;
			case ARROW_LAYOUT_FIXED_LIST:
			case ARROW_LAYOUT_STRUCT:
				buffers = 1;
				children = info->layout == ARROW_LAYOUT_STRUCT ? -1 : 1;
				break;
			case ARROW_LAYOUT_VAR:
				buffers = 3;
				offsets = true;
				break;
			case ARROW_LAYOUT_LIST_VIEW:
				buffers = 3;
				offsets = true;
				children = 1;
				break;
			case ARROW_LAYOUT_LIST:
				buffers = 2;
				offsets = true;
				children = 1;
				break;
			default:
				buffers = 2;
				break;
		}
		tap_ok(info->n_buffers == buffers && arrow_field_buffer_count(&f) == buffers &&
			   info->n_children == children &&
			   (offsets ? (info->offset_width == 4 || info->offset_width == 8) &&
				info->alignment == info->offset_width : info->offset_width == 0),
			   "%s: %d buffers, %d children, offsets %d bytes", info->name, buffers,
			   children, info->offset_width);
	}
	tap_ok(arrow_type_info(ARROW_TYPE_LARGE_UTF8)->offset_width == 8 &&
		   arrow_type_info(ARROW_TYPE_LARGE_LIST_VIEW)->offset_width == 8 &&
		   arrow_type_info(ARROW_TYPE_LIST)->offset_width == 4 &&
		   arrow_type_info(ARROW_TYPE_MAP)->offset_width == 4,
		   "LARGE_ types have 64-bit offsets, the others 32-bit");
}

/* Value kinds and statistics agree with what the builder accepts */
static void
test_values(void)
{
	int			bad = 0;

	for (int id = ARROW_TYPE_FIRST; id <= ARROW_TYPE_LAST; id++)
	{
		const ArrowTypeInfo *info = arrow_type_info(id);
		bool		scalar = info->layout == ARROW_LAYOUT_BITS || info->layout == ARROW_LAYOUT_FIXED ||
			info->layout == ARROW_LAYOUT_VAR || info->layout == ARROW_LAYOUT_VIEW;

		if (scalar != (info->value != ARROW_VALUE_NONE))
			bad++;
		/* min/max only over values that compare as numbers */
		if (info->minmax == ARROW_MINMAX_INT &&
			!(info->value == ARROW_VALUE_INT || info->value == ARROW_VALUE_UINT))
			bad++;
		if (info->minmax == ARROW_MINMAX_FLOAT && info->value != ARROW_VALUE_FLOAT)
			bad++;
		if (info->minmax == ARROW_MINMAX_DECIMAL && info->value != ARROW_VALUE_DECIMAL)
			bad++;
	}
	tap_ok(bad == 0, "value kinds match layouts, min/max kinds match value kinds (%d bad)", bad);
	bad = 0;
	for (int id = ARROW_TYPE_FIRST; id <= ARROW_TYPE_LAST; id++)
		bad += arrow_type_is_int(id) != (id >= ARROW_TYPE_INT8 && id <= ARROW_TYPE_UINT64);
	tap_ok(bad == 0 && !arrow_type_is_int(0), "the integer types are INT8 .. UINT64");
	tap_ok(arrow_type_info(ARROW_TYPE_UINT64)->minmax == ARROW_MINMAX_NONE &&
		   arrow_type_info(ARROW_TYPE_UINT32)->minmax == ARROW_MINMAX_INT &&
		   arrow_type_info(ARROW_TYPE_TIMESTAMP)->minmax == ARROW_MINMAX_INT &&
		   arrow_type_info(ARROW_TYPE_DECIMAL128)->minmax == ARROW_MINMAX_DECIMAL,
		   "min/max as int64 only where every value fits (not uint64)");
}

/* Default PostgreSQL types */
static void
test_pg_names(void)
{
	ArrowType	ts = {.id = ARROW_TYPE_TIMESTAMP, .unit = ARROW_UNIT_MICRO};
	ArrowType	tstz = {.id = ARROW_TYPE_TIMESTAMP, .unit = ARROW_UNIT_MICRO, .timezone = "UTC"};
	ArrowType	i32 = {.id = ARROW_TYPE_INT32};
	ArrowType	u64 = {.id = ARROW_TYPE_UINT64};
	ArrowType	list = {.id = ARROW_TYPE_LIST};

	tap_ok(strcmp(arrow_type_pg_name(&ts), "timestamp") == 0 &&
		   strcmp(arrow_type_pg_name(&tstz), "timestamptz") == 0,
		   "timestamp maps to timestamptz only with a time zone");
	tap_ok(strcmp(arrow_type_pg_name(&i32), "int4") == 0 &&
		   strcmp(arrow_type_pg_name(&u64), "numeric") == 0,
		   "int32 -> int4, uint64 -> numeric");
	tap_ok(arrow_type_pg_name(&list) == NULL, "a list's type follows from its child");
}

/* Every writable scalar type through the writer and back through the reader */
static void
test_round_trip(void)
{
	char		path[] = "/tmp/test_types_XXXXXX";
	int			fd = mkstemp(path);
	ArrowField	fields[ARROW_TYPE_LAST];
	ArrowBuilder *builders[ARROW_TYPE_LAST];
	ArrowSchema schema = {.fields = fields};
	ArrowWriter *w = NULL;
	ArrowFile  *file = NULL;
	ArrowError	err = {0};
	char		names[ARROW_TYPE_LAST][16];
	int			bad = 0;

	close(fd);
	for (int id = ARROW_TYPE_FIRST; id <= ARROW_TYPE_LAST; id++)
	{
		const ArrowTypeInfo *info = arrow_type_info(id);
		ArrowField *f = &fields[schema.n_fields];

		if (!info->writable || info->n_children != 0)
			continue;
		memset(f, 0, sizeof(*f));
		snprintf(names[schema.n_fields], sizeof(names[0]), "c%d", id);
		f->name = names[schema.n_fields];
		f->nullable = true;
		f->type.id = id;
		f->type.unit = (id == ARROW_TYPE_TIME64) ? ARROW_UNIT_MICRO : ARROW_UNIT_MILLI;
		f->type.precision = 10;
		f->type.scale = 2;
		f->type.byte_width = 4;
		schema.n_fields++;
	}
	if (!tap_ok(arrow_writer_create(path, &schema, NULL, &w, &err) == ARROW_OK,
				"writer takes every writable scalar type (%s)", err.message))
		return;
	for (int i = 0; i < schema.n_fields; i++)
	{
		if (arrow_builder_create(&fields[i], NULL, &builders[i], &err) != ARROW_OK ||
			arrow_append_null(builders[i], &err) != ARROW_OK)
			bad++;
	}
	tap_ok(bad == 0 && arrow_writer_write_batch(w, builders, NULL, &err) == ARROW_OK &&
		   arrow_writer_close(w, &err) == ARROW_OK, "one batch written (%s)", err.message);
	for (int i = 0; i < schema.n_fields; i++)
		arrow_builder_free(builders[i]);
	if (tap_ok(arrow_file_open(path, NULL, &file, &err) == ARROW_OK, "file read back (%s)",
			   err.message))
	{
		for (int i = 0; i < schema.n_fields; i++)
		{
			char		a[128];
			char		b[128];

			arrow_type_format(&fields[i].type, a, sizeof(a));
			arrow_type_format(&file->schema.fields[i].type, b, sizeof(b));
			tap_ok(file->schema.fields[i].type.id == fields[i].type.id && strcmp(a, b) == 0,
				   "%s written and read as %s", a, b);
		}
		arrow_file_close(file);
	}
	unlink(path);
}

/* The readers of stored values */
static void
test_load(void)
{
	uint8_t		b[8] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	float		f = 1.5f;
	double		d = -2.25;
	uint16_t	h = 0x3c00;		/* 1.0 */

	tap_ok(arrow_load_int(b, 1) == -2 && arrow_load_int(b, 2) == -2 &&
		   arrow_load_int(b, 4) == -2 && arrow_load_int(b, 8) == -2,
		   "signed loads sign-extend");
	tap_ok(arrow_load_uint(b, 1) == 0xfe && arrow_load_uint(b, 2) == 0xfffe &&
		   arrow_load_uint(b, 4) == 0xfffffffeu && arrow_load_uint(b, 8) == UINT64_MAX - 1,
		   "unsigned loads zero-extend");
	tap_ok(arrow_load_float((uint8_t *) &h, 2) == 1.0 &&
		   arrow_load_float((uint8_t *) &f, 4) == 1.5 &&
		   arrow_load_float((uint8_t *) &d, 8) == -2.25, "float16, float32, float64 loads");
}

int
main(void)
{
	test_rows();
	test_widths();
	test_layouts();
	test_values();
	test_pg_names();
	test_round_trip();
	test_load();
	return tap_done();
}
