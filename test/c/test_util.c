/*
 * test_util.c
 *		Unit tests of arrow_util.c: float16 conversion (exhaustive), decimal128
 *		formatting and parsing, metadata and schema copy/compare.
 */
#include <math.h>
#include <string.h>

#include "arrow_internal.h"
#include "tap.h"

static void
test_half(void)
{
	int			bad = 0;

	/* every half converts to float and back to the same bits (NaNs stay NaN) */
	for (uint32_t h = 0; h < 65536; h++)
	{
		float		f = arrow_half_to_float((uint16_t) h);
		uint16_t	back = arrow_float_to_half(f);

		if (isnan(f) ? !((back & 0x7c00) == 0x7c00 && (back & 0x3ff)) : back != h)
			bad++;
	}
	tap_ok(bad == 0, "float16 -> float -> float16 round trip for all 65536 values (%d bad)", bad);
	tap_ok(arrow_half_to_float(0x3c00) == 1.0f, "half 0x3c00 is 1.0");
	tap_ok(arrow_half_to_float(0x7bff) == 65504.0f, "half 0x7bff is 65504 (max)");
	tap_ok(arrow_half_to_float(0x0001) == 0x1p-24f, "half 0x0001 is 2^-24 (min subnormal)");
	tap_ok(arrow_float_to_half(65520.0f) == 0x7c00, "65520 rounds to +inf");
	tap_ok(arrow_float_to_half(65519.0f) == 0x7bff, "65519 rounds to 65504");
	/* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0) */
	tap_ok(arrow_float_to_half(1.0f + 0x1p-11f) == 0x3c00, "tie rounds to even");
	tap_ok(arrow_float_to_half(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01, "above tie rounds up");
	tap_ok(arrow_float_to_half(-0.0f) == 0x8000, "-0.0 keeps its sign");
	tap_ok(arrow_float_to_half(0x1p-26f) == 0x0000, "2^-26 underflows to 0");
	tap_ok(arrow_float_to_half(0x1p-25f + 0x1p-30f) == 0x0001, "just above 2^-25 rounds to min subnormal");
}

static void
check_decimal(const char *in, int p, int s, const char *expect)
{
	ArrowDecimal128 d;
	ArrowError	err;
	char		buf[64];
	int			rc = arrow_decimal128_parse(in, p, s, &d, &err);

	if (expect == NULL)
	{
		tap_ok(rc != ARROW_OK, "decimal \"%s\" (%d,%d) is rejected", in, p, s);
		return;
	}
	if (!tap_ok(rc == ARROW_OK, "decimal \"%s\" (%d,%d) parses", in, p, s))
	{
		tap_diag("%s", err.message);
		return;
	}
	arrow_decimal128_format(d, s, buf, sizeof(buf));
	tap_ok(strcmp(buf, expect) == 0, "decimal \"%s\" (%d,%d) formats as \"%s\" (got \"%s\")",
		   in, p, s, expect, buf);
}

static void
test_decimal(void)
{
	check_decimal("0", 10, 2, "0.00");
	check_decimal("-123.45", 10, 2, "-123.45");
	check_decimal("1.5", 10, 2, "1.50");
	check_decimal("-0.01", 10, 2, "-0.01");
	check_decimal("42", 5, 0, "42");
	check_decimal("99999999999999999999999999999999999999", 38, 0,
				  "99999999999999999999999999999999999999");
	check_decimal("-9999999999999999999999999999.9999999999", 38, 10,
				  "-9999999999999999999999999999.9999999999");
	/* Arrow allows negative scales and scales above the precision */
	check_decimal("1200", 5, -2, "1200");
	check_decimal("-9999900", 5, -2, "-9999900");
	check_decimal("0", 5, -2, "0");
	check_decimal("1250", 5, -2, NULL);		/* not a multiple of 100 */
	check_decimal("999999999999999999999999999999999999990000000000", 38, -10,
				  "999999999999999999999999999999999999990000000000");
	check_decimal("0.0099999", 5, 7, "0.0099999");
	check_decimal("0.001", 5, 7, "0.0010000");
	check_decimal("0.01", 5, 7, NULL);		/* 100000 has 6 digits > 5 */
	check_decimal("0.1", 5, 7, NULL);		/* 1000000 has 7 digits > 5 */
	check_decimal("100000", 5, 0, NULL);	/* too many digits for precision */
	check_decimal("1.234", 10, 2, NULL);	/* too many fraction digits */
	check_decimal("12a", 10, 2, NULL);
	check_decimal("", 10, 2, NULL);
	check_decimal("-", 10, 2, NULL);
}

static void
test_schema(void)
{
	ArrowField	child = {.name = "item", .nullable = true, .type = {.id = ARROW_TYPE_INT32}};
	ArrowField	fields[2] = {
		{.name = "ts", .nullable = true,
		 .type = {.id = ARROW_TYPE_TIMESTAMP, .unit = ARROW_UNIT_MICRO, .timezone = "UTC"}},
		{.name = "l", .nullable = false, .type = {.id = ARROW_TYPE_LIST},
		 .n_children = 1, .children = &child},
	};
	ArrowSchema s = {.n_fields = 2, .fields = fields};
	ArrowSchema copy;
	ArrowError	err;
	char		why[256];
	char		tbuf[64];

	tap_ok(arrow_metadata_set(NULL, &s.metadata, "k", "v1", &err) == ARROW_OK, "metadata set");
	tap_ok(arrow_metadata_set(NULL, &s.metadata, "k", "v2", &err) == ARROW_OK, "metadata replace");
	tap_ok(s.metadata.count == 1 && strcmp(arrow_metadata_get(&s.metadata, "k"), "v2") == 0,
		   "metadata replaced in place");
	tap_ok(arrow_schema_copy(NULL, &copy, &s, &err) == ARROW_OK, "schema copy");
	tap_ok(arrow_schema_equal(&s, &copy, why, sizeof(why)), "copy equals original");
	tap_ok(strcmp(arrow_metadata_get(&copy.metadata, "k"), "v2") == 0, "copy has metadata");
	copy.fields[1].children[0].type.id = ARROW_TYPE_INT64;
	tap_ok(!arrow_schema_equal(&s, &copy, why, sizeof(why)), "changed child type differs");
	tap_ok(strstr(why, "l.item") != NULL && strstr(why, "int32 vs int64") != NULL,
		   "difference names the field and types: %s", why);
	arrow_type_format(&fields[0].type, tbuf, sizeof(tbuf));
	tap_ok(strcmp(tbuf, "timestamp[us, tz=UTC]") == 0, "type format %s", tbuf);
	tap_ok(arrow_field_buffer_count(&fields[1]) == 2 && arrow_field_buffer_count(&child) == 2,
		   "buffer counts");
	arrow_schema_free(NULL, &copy);
	arrow_metadata_free(NULL, &s.metadata);
}

int
main(void)
{
	test_half();
	test_decimal();
	test_schema();
	return tap_done();
}
