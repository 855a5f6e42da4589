/*
 * xpu_harness.c
 *		Runs one-opcode xPU programs on values read from stdin and prints
 *		each row's result, so that test/python/test_xpu_oracle.py can compare
 *		the engine with PostgreSQL evaluating the same SQL expression.
 *
 * Input, one case after the other:
 *		case OPNAME RTYPE[:SCALE] [ATYPE[:SCALE] ...]
 *		[text HEX | field N | list [sorted] V ...]	the immediate
 *		row V ...									one per row
 *		end
 * Values: N is NULL; bool t/f; integers and floats in C syntax (nan, inf);
 * float2 as its bits in hex (0x3c00);
 * numeric as a decimal string; text as x + hex bytes; date as days and
 * timestamp as microseconds since 2000-01-01, or inf / -inf; interval as
 * MONTHS:DAYS:MICROSECONDS.
 *
 * Output per row: "ok VALUE", "null", "error SQLSTATE" or "fallback"
 * (VALUE printed as the input), then per case "agree" when the per-row
 * (GPU) and per-tile (CPU) forms give identical results over all rows at
 * once, else "MISMATCH".
 */
#include <stdio.h>

#include "xpu_testlib.h"

#define MAX_ROWS	4096

static const char *
sqlstate(int code)
{
	switch (code)
	{
		case XPU_ERR_OUT_OF_RANGE: return "22003";
		case XPU_ERR_DIVISION_BY_ZERO: return "22012";
		case XPU_ERR_DATETIME_OUT_OF_RANGE: return "22008";
		case XPU_ERR_SUBSTRING: return "22011";
		default: return "XX000";
	}
}

static XpuType
parse_type(const char *s, int *scale)
{
	int			t;

	*scale = 0;
	for (t = 1; t < XPU_T_N_TYPES; t++)
	{
		size_t		n = strlen(xpu_type_name(t));

		if (strncmp(s, xpu_type_name(t), n) == 0 && (s[n] == '\0' || s[n] == ':'))
		{
			if (s[n] == ':')
				*scale = atoi(s + n + 1);
			return (XpuType) t;
		}
	}
	fprintf(stderr, "unknown type %s\n", s);
	exit(2);
}

static __int128
parse_numeric(const char *s, int scale)
{
	__int128	v = 0;
	int			neg = (*s == '-'), frac = -1;

	s += (*s == '-' || *s == '+');
	for (; *s; s++)
	{
		if (*s == '.')
		{
			frac = 0;
			continue;
		}
		if (frac >= scale)
			break;
		v = v * 10 + (*s - '0');
		if (frac >= 0)
			frac++;
	}
	for (frac = frac < 0 ? 0 : frac; frac < scale; frac++)
		v *= 10;
	return neg ? -v : v;
}

static int
hexval(char c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* parse one value; sets *inf to +-1 for an infinite date/timestamp */
static void
parse_value(const char *s, XpuType t, int scale, TVal *v, int *inf)
{
	memset(v, 0, sizeof(*v));
	*inf = 0;
	if (strcmp(s, "N") == 0)
	{
		v->null = 1;
		return;
	}
	switch (t)
	{
		case XPU_T_BOOL: v->i = (*s == 't'); break;
		case XPU_T_FLOAT4:
		case XPU_T_FLOAT8: v->f = t == XPU_T_FLOAT4 ? strtof(s, NULL) : strtod(s, NULL); break;
		case XPU_T_FLOAT2: v->i = strtoll(s, NULL, 16); break;
		case XPU_T_NUMERIC: v->n = parse_numeric(s, scale); break;
		case XPU_T_INTERVAL:
			{
				long long	us;

				if (sscanf(s, "%d:%d:%lld", &v->iv.months, &v->iv.days, &us) != 3)
					exit(2);
				v->iv.us = us;
				break;
			}
		case XPU_T_TEXT:
			{
				size_t		n = strlen(s + 1) / 2, i;
				char	   *p = (char *) malloc(n + 1);

				for (i = 0; i < n; i++)
					p[i] = (char) (hexval(s[1 + 2 * i]) * 16 + hexval(s[2 + 2 * i]));
				v->s = p;
				v->len = (int32_t) n;
				break;
			}
		default:
			if (strcmp(s, "inf") == 0 || strcmp(s, "-inf") == 0)
			{
				int			date = (t == XPU_T_DATE);

				*inf = *s == '-' ? -1 : 1;
				v->i = *s == '-' ? (date ? XPU_DATEVAL_NOBEGIN : XPU_DT_NOBEGIN) :
					(date ? XPU_DATEVAL_NOEND : XPU_DT_NOEND);
			}
			else
				v->i = strtoll(s, NULL, 10);
			break;
	}
}

static void
print_value(XpuType t, int scale, const XpuValue *v)
{
	char		buf[64];
	int			i;

	switch (t)
	{
		case XPU_T_BOOL: printf("ok %s\n", v->i ? "true" : "false"); break;
		case XPU_T_FLOAT4: printf("ok %.9g\n", (double) v->f4); break;
		case XPU_T_FLOAT8: printf("ok %.17g\n", v->f8); break;
		case XPU_T_FLOAT2: printf("ok 0x%04x\n", (unsigned) (uint16_t) v->i); break;
		case XPU_T_NUMERIC:
			xpu_numeric_format(v->n, scale, buf);
			printf("ok %s\n", buf);
			break;
		case XPU_T_TEXT:
			printf("ok x");
			for (i = 0; i < v->t.len; i++)
				printf("%02x", (unsigned char) v->t.p[i]);
			printf("\n");
			break;
		case XPU_T_INTERVAL:
			printf("ok %d:%d:%lld\n", v->iv.months, v->iv.days, (long long) v->iv.us);
			break;
		case XPU_T_DATE:
		case XPU_T_TIMESTAMP:
			if (v->i == XPU_DT_NOBEGIN || (t == XPU_T_DATE && v->i == XPU_DATEVAL_NOBEGIN))
				printf("ok -infinity\n");
			else if (v->i == XPU_DT_NOEND || (t == XPU_T_DATE && v->i == XPU_DATEVAL_NOEND))
				printf("ok infinity\n");
			else
				printf("ok %lld\n", (long long) v->i);
			break;
		default: printf("ok %lld\n", (long long) v->i); break;
	}
}

/* one row alone: infinite arguments become constants */
static void
run_row(TOp *o, TVal *args, const int *inf)
{
	TCol		cols[3];
	TRun		r;
	XpuProgram *prog;
	char		err[256];
	int			k;

	for (k = 0; k < o->nargs; k++)
	{
		o->is_const[k] = inf[k] != 0;
		o->const_val[k] = args[k].i;
		tcol_build(&cols[k], o->at[k], o->as[k], &args[k], 1);
	}
	if ((prog = top_build(o, err, sizeof(err))) == NULL)
	{
		printf("invalid %s\n", err);
		exit(2);
	}
	trun_exec(&r, prog, cols, o->nargs, 1);
	if (!trun_agree(&r, prog, o->rt))
		printf("MISMATCH row\n");
	else if (r.err[0].code == XPU_ERR_FALLBACK)
		printf("fallback\n");
	else if (r.err[0].code != XPU_OK)
		printf("error %s %s\n", sqlstate(r.err[0].code), r.err[0].message);
	else if (r.res[0].nulls[0])
		printf("null\n");
	else
		print_value(o->rt, o->rs, &r.res[0].values[0]);
	trun_free(&r);
	for (k = 0; k < o->nargs; k++)
		tcol_free(&cols[k]);
	free(prog);
	memset(o->is_const, 0, sizeof(o->is_const));
}

/* all rows at once through both forms (rows with infinities left out) */
static void
run_all(TOp *o, TVal rows[][3], int (*inf)[3], int nrows)
{
	static TVal colvals[3][MAX_ROWS];
	TCol		cols[3];
	TRun		r;
	XpuProgram *prog;
	char		err[256];
	int			k, i, n = 0;

	for (i = 0; i < nrows; i++)
	{
		if (inf[i][0] || inf[i][1] || inf[i][2])
			continue;
		for (k = 0; k < o->nargs; k++)
			colvals[k][n] = rows[i][k];
		n++;
	}
	for (k = 0; k < o->nargs; k++)
		tcol_build(&cols[k], o->at[k], o->as[k], colvals[k], n);
	prog = top_build(o, err, sizeof(err));
	trun_exec(&r, prog, cols, o->nargs, n);
	printf(trun_agree(&r, prog, o->rt) ? "agree\n" : "MISMATCH\n");
	trun_free(&r);
	for (k = 0; k < o->nargs; k++)
		tcol_free(&cols[k]);
	free(prog);
}

/* the immediate line: text / field / list */
static void
parse_imm(TOp *o, char *line)
{
	static int64_t list[256];
	static char *tl[256];
	static int32_t tlens[256];
	char	   *tok = strtok(line, " \n");
	TVal		v;
	int			inf;

	if (strcmp(tok, "field") == 0)
		o->imm = atoi(strtok(NULL, " \n"));
	else if (strcmp(tok, "text") == 0)
	{
		parse_value(strtok(NULL, " \n"), XPU_T_TEXT, 0, &v, &inf);
		o->text = v.s;
		o->textlen = v.len;
	}
	else if (strcmp(tok, "list") == 0)
	{
		while ((tok = strtok(NULL, " \n")) != NULL && o->nlist < 256)
		{
			if (strcmp(tok, "sorted") == 0)
			{
				o->sorted = 1;
				continue;
			}
			parse_value(tok, o->at[0], o->as[0], &v, &inf);
			if (v.null)
				o->has_null = 1;
			else if (o->at[0] == XPU_T_TEXT)
			{
				tl[o->nlist] = (char *) v.s;
				tlens[o->nlist++] = v.len;
			}
			else if (o->at[0] == XPU_T_FLOAT8)
				memcpy(&list[o->nlist++], &v.f, 8);
			else
				list[o->nlist++] = v.i;
		}
		if (o->at[0] == XPU_T_TEXT)
		{
			o->tlist = (const char *const *) tl;
			o->tlens = tlens;
		}
		else
			o->list = list;
	}
}

int
main(void)
{
	static char line[65536];
	static TVal rows[MAX_ROWS][3];
	static int	inf[MAX_ROWS][3];
	TOp			o;
	int			nrows = 0, k, i;

	while (fgets(line, sizeof(line), stdin))
	{
		char	   *tok;

		if (strncmp(line, "case ", 5) == 0)
		{
			memset(&o, 0, sizeof(o));
			nrows = 0;
			strtok(line, " \n");
			o.op = (XpuOpcode) xpu_opcode_lookup(strtok(NULL, " \n"));
			o.rt = parse_type(strtok(NULL, " \n"), &o.rs);
			while ((tok = strtok(NULL, " \n")) != NULL && o.nargs < 3)
			{
				o.at[o.nargs] = parse_type(tok, &o.as[o.nargs]);
				o.nargs++;
			}
		}
		else if (strncmp(line, "row", 3) == 0 && nrows < MAX_ROWS)
		{
			strtok(line, " \n");
			for (k = 0; k < o.nargs; k++)
				parse_value(strtok(NULL, " \n"), o.at[k], o.as[k], &rows[nrows][k],
							&inf[nrows][k]);
			nrows++;
		}
		else if (strncmp(line, "end", 3) == 0)
		{
			for (i = 0; i < nrows; i++)
				run_row(&o, rows[i], inf[i]);
			run_all(&o, rows, inf, nrows);
			for (i = 0; i < nrows; i++)
				for (k = 0; k < o.nargs; k++)
					free((char *) rows[i][k].s);
			free((char *) o.text);
			for (i = 0; o.tlist && i < o.nlist; i++)
				free((char *) o.tlist[i]);
			fflush(stdout);
		}
		else if (line[0] != '\n' && line[0] != '#')
			parse_imm(&o, line);
	}
	return 0;
}
