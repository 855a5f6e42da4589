/*-------------------------------------------------------------------------
 *
 * xpu_text.h
 *		Opcode bodies of text (xpu_step.h states the contract): comparisons
 *		in the C collation, LIKE matchers, length and substring by
 *		characters of UTF-8 text.
 *
 * Comparisons are bytewise (memcmp order, a prefix sorts first), which is
 * PostgreSQL's C collation; codegen keeps any other collation in
 * PostgreSQL.  LIKE patterns are compiled by codegen into one literal (the
 * escapes resolved) matched exactly, as a prefix, a suffix or anywhere;
 * the literal sits in the constants pool as int32 length + bytes.
 * Characters are counted as PostgreSQL's pg_utf_mblen does (the lead byte
 * gives the length); substring() follows text_substring(): a start below 1
 * shortens the length, a negative length raises 22011.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_TEXT_H
#define XPU_TEXT_H

#include "xpu_step.h"

/* bytewise comparison: -1, 0, 1 */
XPU_HOST_DEVICE int
xpu_cmp_text(const XpuText *a, const XpuText *b)
{
	int32_t		n = a->len < b->len ? a->len : b->len;
	int32_t		i;

	for (i = 0; i < n; i++)
	{
		uint8_t		x = (uint8_t) a->p[i], y = (uint8_t) b->p[i];

		if (x != y)
			return x < y ? -1 : 1;
	}
	return a->len < b->len ? -1 : (a->len > b->len ? 1 : 0);
}

/* the text constant at byte offset off of the pool */
XPU_HOST_DEVICE XpuText
xpu_const_text(const XpuProgram *prog, int32_t off)
{
	XpuText		t;
	const char *p = XPU_CONSTS(prog) + off;

	t.len = *(const int32_t *) p;
	t.p = p + sizeof(int32_t);
	return t;
}

/* does a contain k at byte position pos */
XPU_HOST_DEVICE int
xpu_text_at(const XpuText *a, int32_t pos, const XpuText *k)
{
	int32_t		i;

	if (pos < 0 || pos + k->len > a->len)
		return 0;
	for (i = 0; i < k->len; i++)
	{
		if (a->p[pos + i] != k->p[i])
			return 0;
	}
	return 1;
}

#define XPU_TEXT_CMP(NAME, OP) \
XPU_STEP(NAME) { XPU_SET_I(s, xpu_cmp_text(&s->a->t, &s->b->t) OP 0); }
XPU_TEXT_CMP(EQ_TEXT, ==)
XPU_TEXT_CMP(NE_TEXT, !=)
XPU_TEXT_CMP(LT_TEXT, <)
XPU_TEXT_CMP(LE_TEXT, <=)
XPU_TEXT_CMP(GT_TEXT, >)
XPU_TEXT_CMP(GE_TEXT, >=)

XPU_STEP(LIKE_EXACT)
{
	XpuText		k = xpu_const_text(s->prog, s->ins->imm);

	XPU_SET_I(s, s->a->t.len == k.len && xpu_text_at(&s->a->t, 0, &k));
}

XPU_STEP(LIKE_PREFIX)
{
	XpuText		k = xpu_const_text(s->prog, s->ins->imm);

	XPU_SET_I(s, xpu_text_at(&s->a->t, 0, &k));
}

XPU_STEP(LIKE_SUFFIX)
{
	XpuText		k = xpu_const_text(s->prog, s->ins->imm);

	XPU_SET_I(s, xpu_text_at(&s->a->t, s->a->t.len - k.len, &k));
}

XPU_STEP(LIKE_INFIX)
{
	XpuText		k = xpu_const_text(s->prog, s->ins->imm);
	int32_t		pos, found = 0;

	for (pos = 0; pos + k.len <= s->a->t.len && !found; pos++)
		found = xpu_text_at(&s->a->t, pos, &k);
	XPU_SET_I(s, found);
}

/*
 * IN_TEXT: a IN (list of text constants); the list holds n int32 offsets
 * (from the XpuInList) of text constants, searched linearly.
 */
XPU_STEP(IN_TEXT)
{
	const XpuInList *l = (const XpuInList *) xpu_const_ptr(s);
	const int32_t *offs = (const int32_t *) (l + 1);
	int32_t		i, found = 0;

	for (i = 0; i < l->n && !found; i++)
	{
		XpuText		k = xpu_const_text(s->prog, s->ins->imm + offs[i]);

		found = (xpu_cmp_text(&s->a->t, &k) == 0);
	}
	s->d->i = found;
	*s->dn = (!found && l->has_null);
}

/* bytes of the UTF-8 character whose lead byte is c (pg_utf_mblen) */
XPU_HOST_DEVICE int32_t
xpu_utf8_len(uint8_t c)
{
	if ((c & 0x80) == 0)
		return 1;
	if ((c & 0xe0) == 0xc0)
		return 2;
	if ((c & 0xf0) == 0xe0)
		return 3;
	if ((c & 0xf8) == 0xf0)
		return 4;
	return 1;
}

/* byte position after skipping n characters from byte pos (clamped) */
XPU_HOST_DEVICE int32_t
xpu_utf8_skip(const XpuText *t, int32_t pos, int64_t n)
{
	while (n-- > 0 && pos < t->len)
		pos += xpu_utf8_len((uint8_t) t->p[pos]);
	return pos < t->len ? pos : t->len;
}

XPU_STEP(LENGTH_TEXT)
{
	int32_t		pos = 0, n = 0;

	while (pos < s->a->t.len)
	{
		pos += xpu_utf8_len((uint8_t) s->a->t.p[pos]);
		n++;
	}
	XPU_SET_I(s, n);
}

/* the characters [from, from + count) of a, 1-based; count < 0: to the end */
XPU_HOST_DEVICE void
xpu_substr(XpuCtx *s, int64_t from, int64_t count)
{
	int32_t		begin, end;

	begin = xpu_utf8_skip(&s->a->t, 0, from - 1);
	end = count < 0 ? s->a->t.len : xpu_utf8_skip(&s->a->t, begin, count);
	s->d->t.p = s->a->t.p + begin;
	s->d->t.len = end - begin;
	*s->dn = 0;
}

XPU_STEP(SUBSTR_FROM)
{
	xpu_substr(s, s->b->i < 1 ? 1 : s->b->i, -1);
}

XPU_STEP(SUBSTR_FOR)
{
	int64_t		start = s->b->i, len = s->c->i, end = start + len;

	if (len < 0)
	{
		XPU_STEP_FAIL(s, XPU_ERR_SUBSTRING, "negative substring length not allowed");
		return;
	}
	if (end > INT32_MAX)
		xpu_substr(s, start < 1 ? 1 : start, -1);	/* runs to the end */
	else if (end < 1)
		xpu_substr(s, 1, 0);
	else
		xpu_substr(s, start < 1 ? 1 : start, end - (start < 1 ? 1 : start));
}

#endif							/* XPU_TEXT_H */
