/*-------------------------------------------------------------------------
 *
 * xpu_text.h
 *		Opcode bodies of text (xpu_step.h states the contract): comparisons
 *		in the C collation, LIKE matchers, length and substring by
 *		characters of UTF-8 text.
 *
 * Comparisons are bytewise (memcmp order, a prefix sorts first), which is
 * PostgreSQL's C collation; codegen keeps any other collation in
 * PostgreSQL.  A LIKE pattern of one literal (the escapes resolved) is
 * matched exactly, as a prefix, a suffix or anywhere (LIKE_EXACT ..
 * LIKE_INFIX); any other pattern, and every ILIKE, by xpu_like_match,
 * PostgreSQL's UTF8_MatchText.  Literals and patterns sit in the constants
 * pool as int32 length + bytes.
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

/* the byte position of the character after the one at byte pos (NextChar) */
XPU_HOST_DEVICE int32_t
xpu_utf8_next(const XpuText *t, int32_t pos)
{
	do
		pos++;
	while (pos < t->len && ((uint8_t) t->p[pos] & 0xc0) == 0x80);
	return pos;
}

/* byte i of t, A-Z as a-z where fold (asc_tolower, as lower() in C ctype) */
XPU_HOST_DEVICE uint8_t
xpu_like_byte(const XpuText *t, int32_t i, int fold)
{
	uint8_t		c = (uint8_t) t->p[i];

	return (fold && c >= 'A' && c <= 'Z') ? (uint8_t) (c + ('a' - 'A')) : c;
}

/* what a run of xpu_like_run ended in */
#define XPU_LIKE_FALSE		0	/* a mismatch before any '%' */
#define XPU_LIKE_TRUE		1
#define XPU_LIKE_ABORT		2	/* no later start can match either */
#define XPU_LIKE_PERCENT	3	/* *pi is at a '%' */

/*
 * The main loop of PostgreSQL's MatchText from text byte *ti and pattern
 * byte *pi, up to the next '%' of the pattern: literal bytes (a '\' makes
 * the next one literal) compare bytewise, '_' skips one character.
 */
XPU_HOST_DEVICE int
xpu_like_run(const XpuText *t, const XpuText *p, int32_t *ti, int32_t *pi, int fold)
{
	while (*ti < t->len && *pi < p->len)
	{
		uint8_t		c = (uint8_t) p->p[*pi];

		if (c == '%')
			return XPU_LIKE_PERCENT;
		if (c == '_')
		{
			*ti = xpu_utf8_next(t, *ti);
			(*pi)++;
			continue;
		}
		if (c == '\\')
			c = (uint8_t) p->p[++(*pi)];	/* codegen: never the last byte */
		if (c != xpu_like_byte(t, *ti, fold))
			return XPU_LIKE_FALSE;
		(*ti)++;
		(*pi)++;
	}
	if (*ti < t->len)
		return XPU_LIKE_FALSE;	/* the pattern ended first */
	while (*pi < p->len && p->p[*pi] == '%')
		(*pi)++;
	return *pi >= p->len ? XPU_LIKE_TRUE : XPU_LIKE_ABORT;
}

/*
 * xpu_like_match: does t match LIKE pattern p, exactly as PostgreSQL's
 * UTF8_MatchText decides (fold: ILIKE, whose text PostgreSQL lowers with
 * asc_tolower in a C ctype; codegen lowered p).  MatchText recurses at each
 * '%' over the text positions whose byte equals the next literal; a
 * recursive call that reaches a '%' itself returns only TRUE or ABORT, so
 * only the innermost '%' is ever resumed, and its position is all this
 * loop keeps.  A pattern never ends in '\' (codegen keeps it in
 * PostgreSQL, which raises 22025 when the match reaches it).
 */
XPU_HOST_DEVICE int
xpu_like_match(const XpuText *t, const XpuText *p, int fold)
{
	int32_t		ti = 0,
				pi = 0,
				star_p = -1,	/* the pattern after the innermost '%' */
				star_t = 0;		/* the text position tried for it */
	uint8_t		first = 0;		/* the literal byte that follows it */

	for (;;)
	{
		int			r = xpu_like_run(t, p, &ti, &pi, fold);

		if (r == XPU_LIKE_PERCENT)
		{
			/* '%' and '_' after it: skip as many characters as '_'s */
			for (pi++; pi < p->len && (p->p[pi] == '%' || p->p[pi] == '_'); pi++)
			{
				if (p->p[pi] == '_')
				{
					if (ti >= t->len)
						return 0;
					ti = xpu_utf8_next(t, ti);
				}
			}
			if (pi >= p->len)
				return 1;
			first = (uint8_t) p->p[p->p[pi] == '\\' ? pi + 1 : pi];
			star_p = pi;
			star_t = ti;
		}
		else if (r != XPU_LIKE_FALSE || star_p < 0)
			return r == XPU_LIKE_TRUE;
		else
			star_t = xpu_utf8_next(t, star_t);
		while (star_t < t->len && xpu_like_byte(t, star_t, fold) != first)
			star_t = xpu_utf8_next(t, star_t);
		if (star_t >= t->len)
			return 0;			/* ABORT */
		ti = star_t;
		pi = star_p;
	}
}

/* a LIKE / ILIKE pattern of any form: the pattern is the constant at imm */
XPU_STEP(LIKE_MATCH)
{
	XpuText		p = xpu_const_text(s->prog, s->ins->imm);

	XPU_SET_I(s, xpu_like_match(&s->a->t, &p, 0));
}

XPU_STEP(ILIKE_MATCH)
{
	XpuText		p = xpu_const_text(s->prog, s->ins->imm);

	XPU_SET_I(s, xpu_like_match(&s->a->t, &p, 1));
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
