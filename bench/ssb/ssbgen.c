/*
 * ssbgen.c — Star Schema Benchmark (SSB) data generator for pg_warp benchmarks.
 *
 * Writes the five SSB tables (lineorder, customer, supplier, part, date) in
 * PostgreSQL COPY text format (tab-separated; no value is ever null, so `\N`
 * never appears, and no value contains a tab, newline or backslash, so nothing
 * needs escaping).  Row counts and value domains follow the SSB specification
 * (O'Neil, O'Neil, Chen: "Star Schema Benchmark", revision 3, 2009), which
 * derives most domains from TPC-H; bench/ssb/README.md lists every choice made
 * where the specification leaves room.
 *
 * Determinism: every row draws its values from its own pseudo-random stream,
 * seeded from (table, key) alone — one stream per order for lineorder, one per
 * key for the dimension tables.  The output therefore depends only on the scale
 * factor: splitting a table into N chunks (-C N -S K) produces pieces whose
 * concatenation, in chunk order, is byte-for-byte the unsplit output, whatever N.
 *
 * The generator is single-threaded; parallelism comes from chunks, either one
 * process per chunk (-C/-S, as load.sh does with one COPY per chunk) or -j J,
 * which forks J workers writing chunk files into the -o directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Tables and scale                                                         */
/* ------------------------------------------------------------------------ */

enum
{
	T_LINEORDER,
	T_CUSTOMER,
	T_SUPPLIER,
	T_PART,
	T_DATE,
	N_TABLES
};

/* Name on the command line and in file names; the SQL table for date is date1. */
static const char *const table_name[N_TABLES] = {
	"lineorder", "customer", "supplier", "part", "date"
};

/* Distinct stream identifiers so that key 1 of two tables draws different values. */
static const uint64_t table_salt[N_TABLES] = {
	0x4c494e454f524452ULL, 0x435553544f4d4552ULL, 0x535550504c494552ULL,
	0x5041525400000000ULL, 0x4441544500000000ULL
};

/* Dates: 1992-01-01 .. 1998-12-30 (2,556 rows, the count the reference generator
 * produces); see the README for why the last day of 1998 is not included. */
#define FIRST_YEAR      1992
#define N_DATES         2556
/* TPC-H: order dates are uniform in [STARTDATE, ENDDATE - 151 days], i.e.
 * 1992-01-01 .. 1998-08-02: day indexes 0 .. 2405. */
#define N_ORDER_DATES   2406
/* TPC-H: commit date = order date + 30 .. 90 days (at most index 2495). */
#define COMMIT_MIN      30
#define COMMIT_MAX      90

typedef struct Scale
{
	double		sf;
	int64_t		orders;			/* lineorder is generated per order */
	int64_t		rows[N_TABLES]; /* rows per table; lineorder: orders (units) */
} Scale;

/* round(base * sf), at least 1 so that foreign keys always have a target */
static int64_t
scaled(double base, double sf)
{
	double		v = floor(base * sf + 0.5);

	return v < 1.0 ? 1 : (int64_t) v;
}

static void
scale_init(Scale *s, double sf)
{
	s->sf = sf;
	s->orders = scaled(1500000.0, sf);
	s->rows[T_LINEORDER] = s->orders;
	s->rows[T_CUSTOMER] = scaled(30000.0, sf);
	s->rows[T_SUPPLIER] = scaled(2000.0, sf);
	if (sf < 1.0)
		s->rows[T_PART] = scaled(200000.0, sf);
	else
	{
		/* 200,000 * floor(1 + log2(SF)), with the logarithm taken exactly */
		int64_t		k = 0;

		while (ldexp(1.0, (int) k + 1) <= sf)
			k++;
		s->rows[T_PART] = 200000 * (1 + k);
	}
	s->rows[T_DATE] = N_DATES;
}

/* ------------------------------------------------------------------------ */
/* Pseudo-random streams: splitmix64                                        */
/* ------------------------------------------------------------------------ */

typedef struct Rng
{
	uint64_t	state;
} Rng;

static inline uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t
rng_next(Rng *r)
{
	r->state += 0x9e3779b97f4a7c15ULL;
	return mix64(r->state);
}

/* The stream of one row: depends on (table, key) only. */
static inline void
rng_seed(Rng *r, int table, int64_t key)
{
	r->state = mix64(table_salt[table] ^ mix64((uint64_t) key + 0x632be59bd9b4e019ULL));
}

/* Uniform integer in [lo, hi] (multiply-shift; the bias is below 2^-40). */
static inline int64_t
rng_range(Rng *r, int64_t lo, int64_t hi)
{
	uint64_t	n = (uint64_t) (hi - lo) + 1;

	return lo + (int64_t) (((unsigned __int128) rng_next(r) * n) >> 64);
}

/* ------------------------------------------------------------------------ */
/* Buffered output                                                          */
/* ------------------------------------------------------------------------ */

#define OUT_BUFSIZE		(1 << 20)
#define ROW_MAX			1024	/* no row is longer than this */

typedef struct Out
{
	int			fd;
	const char *what;			/* for error messages */
	char	   *buf;
	size_t		len;
} Out;

static const char *progname = "ssbgen";

static void
die(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void
out_flush(Out *o)
{
	size_t		done = 0;

	while (done < o->len)
	{
		ssize_t		n = write(o->fd, o->buf + done, o->len - done);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			die("could not write to %s: %s", o->what, strerror(errno));
		}
		done += (size_t) n;
	}
	o->len = 0;
}

/* Room for one row; the caller then writes at most ROW_MAX bytes at out_ptr. */
static inline char *
out_row_begin(Out *o)
{
	if (OUT_BUFSIZE - o->len < ROW_MAX)
		out_flush(o);
	return o->buf + o->len;
}

static inline void
out_row_end(Out *o, char *end)
{
	o->len = (size_t) (end - o->buf);
}

/* Fixed strings with their lengths, so that copying them needs no strlen. */
typedef struct Str
{
	const char *s;
	int			len;
} Str;

#define S(lit)	{ lit, (int) sizeof(lit) - 1 }

static char digit_pairs[200];

static void
init_digits(void)
{
	for (int i = 0; i < 100; i++)
	{
		digit_pairs[2 * i] = (char) ('0' + i / 10);
		digit_pairs[2 * i + 1] = (char) ('0' + i % 10);
	}
}

static inline char *
put_int(char *p, int64_t sv)
{
	char		tmp[24];
	char	   *t = tmp + sizeof(tmp);
	uint64_t	v;

	if (sv < 0)
	{
		*p++ = '-';
		v = (uint64_t) 0 - (uint64_t) sv;
	}
	else
		v = (uint64_t) sv;
	while (v >= 100)
	{
		uint64_t	r = v % 100;

		v /= 100;
		t -= 2;
		memcpy(t, digit_pairs + 2 * r, 2);
	}
	if (v >= 10)
	{
		t -= 2;
		memcpy(t, digit_pairs + 2 * v, 2);
	}
	else
		*--t = (char) ('0' + v);
	memcpy(p, t, (size_t) (tmp + sizeof(tmp) - t));
	return p + (tmp + sizeof(tmp) - t);
}

/* v in [0, 10^width), zero-padded to width digits */
static inline char *
put_padded(char *p, int64_t v, int width)
{
	for (int i = width - 1; i >= 0; i--)
	{
		p[i] = (char) ('0' + v % 10);
		v /= 10;
	}
	return p + width;
}

static inline char *
put_str(char *p, const Str *s)
{
	memcpy(p, s->s, (size_t) s->len);
	return p + s->len;
}

static inline char *
put_cstr(char *p, const char *s)
{
	size_t		n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

/* ------------------------------------------------------------------------ */
/* Value domains (SSB specification, mostly inherited from TPC-H)            */
/* ------------------------------------------------------------------------ */

static const Str region_names[5] = {
	S("AFRICA"), S("AMERICA"), S("ASIA"), S("EUROPE"), S("MIDDLE EAST")
};

/* The 25 TPC-H nations, in TPC-H nation-key order, with their regions. */
static const struct
{
	Str			name;
	int			region;
}			nations[25] = {
	{S("ALGERIA"), 0}, {S("ARGENTINA"), 1}, {S("BRAZIL"), 1},
	{S("CANADA"), 1}, {S("EGYPT"), 4}, {S("ETHIOPIA"), 0},
	{S("FRANCE"), 3}, {S("GERMANY"), 3}, {S("INDIA"), 2},
	{S("INDONESIA"), 2}, {S("IRAN"), 4}, {S("IRAQ"), 4},
	{S("JAPAN"), 2}, {S("JORDAN"), 4}, {S("KENYA"), 0},
	{S("MOROCCO"), 0}, {S("MOZAMBIQUE"), 0}, {S("PERU"), 1},
	{S("CHINA"), 2}, {S("ROMANIA"), 3}, {S("SAUDI ARABIA"), 4},
	{S("VIETNAM"), 2}, {S("RUSSIA"), 3}, {S("UNITED KINGDOM"), 3},
	{S("UNITED STATES"), 1}
};

/* City prefix: the nation's name cut or space-padded to 9 characters. */
static char city_prefix[25][9];

static const Str mkt_segments[5] = {
	S("AUTOMOBILE"), S("BUILDING"), S("FURNITURE"), S("HOUSEHOLD"), S("MACHINERY")
};

static const Str order_priorities[5] = {
	S("1-URGENT"), S("2-HIGH"), S("3-MEDIUM"), S("4-NOT SPECIFIED"), S("5-LOW")
};

static const Str ship_modes[7] = {
	S("AIR"), S("FOB"), S("MAIL"), S("RAIL"), S("REG AIR"), S("SHIP"), S("TRUCK")
};

/* TPC-H part-name words (the colours), 92 of them. */
static const Str colors[] = {
	S("almond"), S("antique"), S("aquamarine"), S("azure"), S("beige"),
	S("bisque"), S("black"), S("blanched"), S("blue"), S("blush"),
	S("brown"), S("burlywood"), S("burnished"), S("chartreuse"), S("chiffon"),
	S("chocolate"), S("coral"), S("cornflower"), S("cornsilk"), S("cream"),
	S("cyan"), S("dark"), S("deep"), S("dim"), S("dodger"),
	S("drab"), S("firebrick"), S("floral"), S("forest"), S("frosted"),
	S("gainsboro"), S("ghost"), S("goldenrod"), S("green"), S("grey"),
	S("honeydew"), S("hot"), S("indian"), S("ivory"), S("khaki"),
	S("lace"), S("lavender"), S("lawn"), S("lemon"), S("light"),
	S("lime"), S("linen"), S("magenta"), S("maroon"), S("medium"),
	S("metallic"), S("midnight"), S("mint"), S("misty"), S("moccasin"),
	S("navajo"), S("navy"), S("olive"), S("orange"), S("orchid"),
	S("pale"), S("papaya"), S("peach"), S("peru"), S("pink"),
	S("plum"), S("powder"), S("puff"), S("purple"), S("red"),
	S("rose"), S("rosy"), S("royal"), S("saddle"), S("salmon"),
	S("sandy"), S("seashell"), S("sienna"), S("sky"), S("slate"),
	S("smoke"), S("snow"), S("spring"), S("steel"), S("tan"),
	S("thistle"), S("tomato"), S("turquoise"), S("violet"), S("wheat"),
	S("white"), S("yellow")
};
#define N_COLORS ((int) (sizeof(colors) / sizeof(colors[0])))

/* TPC-H part types: 6 x 5 x 5 = 150 */
static const Str type_size[6] = {
	S("STANDARD"), S("SMALL"), S("MEDIUM"), S("LARGE"), S("ECONOMY"), S("PROMO")
};
static const Str type_finish[5] = {
	S("ANODIZED"), S("BURNISHED"), S("PLATED"), S("POLISHED"), S("BRUSHED")
};
static const Str type_metal[5] = {
	S("TIN"), S("NICKEL"), S("BRASS"), S("STEEL"), S("COPPER")
};

/* TPC-H containers: 5 x 8 = 40 */
static const Str container_size[5] = {
	S("SM"), S("LG"), S("MED"), S("JUMBO"), S("WRAP")
};
static const Str container_kind[8] = {
	S("CASE"), S("BOX"), S("BAG"), S("JAR"), S("PKG"), S("PACK"), S("CAN"), S("DRUM")
};

/* 64 address characters: 6 random bits each */
static const char address_chars[65] =
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,.";

static const char *const month_names[12] = {
	"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"
};
static const char *const day_names[7] = {
	"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"
};

/* ------------------------------------------------------------------------ */
/* The calendar                                                             */
/* ------------------------------------------------------------------------ */

typedef struct Day
{
	int			year,
				month,			/* 1..12 */
				mday,			/* 1..31 */
				yday,			/* 1..366 */
				wday;			/* 0 = Sunday .. 6 = Saturday */
	int			last_in_month;
	char		key[8];			/* YYYYMMDD, the date key as text */
} Day;

static Day days[N_DATES];

static int
is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
month_length(int y, int m)
{
	static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && is_leap(y) ? 29 : len[m - 1];
}

static void
init_calendar(void)
{
	int			y = FIRST_YEAR,
				m = 1,
				d = 1,
				yd = 1,
				wd = 3;			/* 1992-01-01 was a Wednesday */

	for (int i = 0; i < N_DATES; i++)
	{
		Day		   *day = &days[i];

		day->year = y;
		day->month = m;
		day->mday = d;
		day->yday = yd;
		day->wday = wd;
		day->last_in_month = d == month_length(y, m);
		put_padded(day->key, (int64_t) y * 10000 + m * 100 + d, 8);

		wd = (wd + 1) % 7;
		yd++;
		if (++d > month_length(y, m))
		{
			d = 1;
			if (++m > 12)
			{
				m = 1;
				y++;
				yd = 1;
			}
		}
	}
}

static void
init_tables(void)
{
	init_digits();
	init_calendar();
	for (int n = 0; n < 25; n++)
	{
		memset(city_prefix[n], ' ', 9);
		memcpy(city_prefix[n], nations[n].name.s,
			   nations[n].name.len < 9 ? (size_t) nations[n].name.len : 9);
	}
}

/* ------------------------------------------------------------------------ */
/* Row generators: each writes rows for keys [first, last] (1-based)         */
/* ------------------------------------------------------------------------ */

typedef struct Progress
{
	int			enabled;
	const char *label;
	int64_t		rows;
	int64_t		next_check;
	struct timespec start,
				last;
} Progress;

static double
elapsed(const struct timespec *a, const struct timespec *b)
{
	return (double) (b->tv_sec - a->tv_sec) + (double) (b->tv_nsec - a->tv_nsec) / 1e9;
}

#define PROGRESS_EVERY_ROWS	65536
#define PROGRESS_SECONDS	5.0

static void
progress_start(Progress *p, int enabled, const char *label)
{
	p->enabled = enabled;
	p->label = label;
	p->rows = 0;
	p->next_check = PROGRESS_EVERY_ROWS;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->last = p->start;
}

static void
progress_report(Progress *p, int final)
{
	struct timespec now;
	double		secs;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!final && elapsed(&p->last, &now) < PROGRESS_SECONDS)
		return;
	p->last = now;
	secs = elapsed(&p->start, &now);
	fprintf(stderr, "%s: %s: %" PRId64 " rows%s in %.1f s, %.2f M rows/s\n",
			progname, p->label, p->rows, final ? " done" : "", secs,
			secs > 0 ? (double) p->rows / secs / 1e6 : 0.0);
}

static inline void
progress_add(Progress *p, int64_t rows)
{
	p->rows += rows;
	if (p->enabled && p->rows >= p->next_check)
	{
		p->next_check = p->rows + PROGRESS_EVERY_ROWS;
		progress_report(p, 0);
	}
}

/* TPC-H retail price of a part, in cents: 900.00 .. 2098.99 */
static inline int64_t
retail_price_cents(int64_t partkey)
{
	return 90000 + (partkey / 10) % 20001 + 100 * (partkey % 1000);
}

typedef struct Line
{
	int64_t		partkey,
				suppkey;
	int			quantity,
				discount,
				tax,
				commit_offset,
				shipmode;
} Line;

/* Draws the values of one order; returns its number of lines (1..7). */
static inline int
draw_order(const Scale *s, int64_t orderkey, int64_t *custkey, int *date,
		   int *priority, Line *lines)
{
	Rng			r;
	int			nlines;

	rng_seed(&r, T_LINEORDER, orderkey);
	nlines = (int) rng_range(&r, 1, 7);
	*custkey = rng_range(&r, 1, s->rows[T_CUSTOMER]);
	*date = (int) rng_range(&r, 0, N_ORDER_DATES - 1);
	*priority = (int) rng_range(&r, 0, 4);
	if (lines == NULL)
		return nlines;
	for (int i = 0; i < nlines; i++)
	{
		Line	   *l = &lines[i];

		l->partkey = rng_range(&r, 1, s->rows[T_PART]);
		l->suppkey = rng_range(&r, 1, s->rows[T_SUPPLIER]);
		l->quantity = (int) rng_range(&r, 1, 50);
		l->discount = (int) rng_range(&r, 0, 10);
		l->tax = (int) rng_range(&r, 0, 8);
		l->commit_offset = (int) rng_range(&r, COMMIT_MIN, COMMIT_MAX);
		l->shipmode = (int) rng_range(&r, 0, 6);
	}
	return nlines;
}

/*
 * lineorder: one unit is one order of 1..7 lines.  Prices are in cents (the
 * integers the reference generator prints):
 *   extendedprice = quantity * retailprice(partkey)
 *   revenue       = extendedprice * (100 - discount) / 100
 *   supplycost    = 6 * retailprice / 10
 *   ordtotalprice = sum over the order's lines of
 *                   extendedprice * (100 + tax) * (100 - discount) / 10000
 */
static void
gen_lineorder(const Scale *s, int64_t first, int64_t last, Out *o, Progress *pg)
{
	for (int64_t ok = first; ok <= last; ok++)
	{
		Line		lines[7];
		int64_t		custkey,
					ext[7],
					total = 0;
		int			date,
					priority;
		int			nlines = draw_order(s, ok, &custkey, &date, &priority, lines);
		const Day  *od = &days[date];

		for (int i = 0; i < nlines; i++)
		{
			ext[i] = lines[i].quantity * retail_price_cents(lines[i].partkey);
			total += ext[i] * (100 + lines[i].tax) * (100 - lines[i].discount) / 10000;
		}
		for (int i = 0; i < nlines; i++)
		{
			const Line *l = &lines[i];
			int64_t		rp = retail_price_cents(l->partkey);
			char	   *p = out_row_begin(o);

			p = put_int(p, ok);
			*p++ = '\t';
			*p++ = (char) ('1' + i);
			*p++ = '\t';
			p = put_int(p, custkey);
			*p++ = '\t';
			p = put_int(p, l->partkey);
			*p++ = '\t';
			p = put_int(p, l->suppkey);
			*p++ = '\t';
			memcpy(p, od->key, 8);
			p += 8;
			*p++ = '\t';
			p = put_str(p, &order_priorities[priority]);
			*p++ = '\t';
			*p++ = '0';			/* lo_shippriority: always 0, as in TPC-H */
			*p++ = '\t';
			p = put_int(p, l->quantity);
			*p++ = '\t';
			p = put_int(p, ext[i]);
			*p++ = '\t';
			p = put_int(p, total);
			*p++ = '\t';
			p = put_int(p, l->discount);
			*p++ = '\t';
			p = put_int(p, ext[i] * (100 - l->discount) / 100);
			*p++ = '\t';
			p = put_int(p, 6 * rp / 10);
			*p++ = '\t';
			*p++ = (char) ('0' + l->tax);
			*p++ = '\t';
			memcpy(p, days[date + l->commit_offset].key, 8);
			p += 8;
			*p++ = '\t';
			p = put_str(p, &ship_modes[l->shipmode]);
			*p++ = '\n';
			out_row_end(o, p);
		}
		progress_add(pg, nlines);
	}
}

/* lineorder rows of orders [first, last], without writing them */
static int64_t
count_lineorder(const Scale *s, int64_t first, int64_t last)
{
	int64_t		n = 0;

	for (int64_t ok = first; ok <= last; ok++)
	{
		int64_t		c;
		int			d,
					pr;

		n += draw_order(s, ok, &c, &d, &pr, NULL);
	}
	return n;
}

/* "Customer#000000042" style names: prefix + key zero-padded to 9 digits */
static inline char *
put_keyed_name(char *p, const char *prefix, int64_t key)
{
	p = put_cstr(p, prefix);
	if (key < 1000000000)
		return put_padded(p, key, 9);
	return put_int(p, key);
}

static inline char *
put_address(char *p, Rng *r)
{
	int			len = (int) rng_range(r, 10, 25);
	uint64_t	bits = 0;

	for (int i = 0; i < len; i++)
	{
		if (i % 10 == 0)
			bits = rng_next(r);
		*p++ = address_chars[bits & 63];
		bits >>= 6;
	}
	return p;
}

/* TPC-H phone: country code (nation + 10), then 3-3-4 digits */
static inline char *
put_phone(char *p, Rng *r, int nation)
{
	p = put_int(p, nation + 10);
	*p++ = '-';
	p = put_int(p, rng_range(r, 100, 999));
	*p++ = '-';
	p = put_int(p, rng_range(r, 100, 999));
	*p++ = '-';
	return put_int(p, rng_range(r, 1000, 9999));
}

/* city, nation, region columns (with the tab between them, none around) */
static inline char *
put_location(char *p, int nation, int city)
{
	memcpy(p, city_prefix[nation], 9);
	p += 9;
	*p++ = (char) ('0' + city);
	*p++ = '\t';
	p = put_str(p, &nations[nation].name);
	*p++ = '\t';
	return put_str(p, &region_names[nations[nation].region]);
}

static void
gen_customer(const Scale *s, int64_t first, int64_t last, Out *o, Progress *pg)
{
	(void) s;
	for (int64_t k = first; k <= last; k++)
	{
		Rng			r;
		char	   *p = out_row_begin(o);
		int			nation,
					city;

		rng_seed(&r, T_CUSTOMER, k);
		nation = (int) rng_range(&r, 0, 24);
		city = (int) rng_range(&r, 0, 9);
		p = put_int(p, k);
		*p++ = '\t';
		p = put_keyed_name(p, "Customer#", k);
		*p++ = '\t';
		p = put_address(p, &r);
		*p++ = '\t';
		p = put_location(p, nation, city);
		*p++ = '\t';
		p = put_phone(p, &r, nation);
		*p++ = '\t';
		p = put_str(p, &mkt_segments[rng_range(&r, 0, 4)]);
		*p++ = '\n';
		out_row_end(o, p);
		progress_add(pg, 1);
	}
}

static void
gen_supplier(const Scale *s, int64_t first, int64_t last, Out *o, Progress *pg)
{
	(void) s;
	for (int64_t k = first; k <= last; k++)
	{
		Rng			r;
		char	   *p = out_row_begin(o);
		int			nation,
					city;

		rng_seed(&r, T_SUPPLIER, k);
		nation = (int) rng_range(&r, 0, 24);
		city = (int) rng_range(&r, 0, 9);
		p = put_int(p, k);
		*p++ = '\t';
		p = put_keyed_name(p, "Supplier#", k);
		*p++ = '\t';
		p = put_address(p, &r);
		*p++ = '\t';
		p = put_location(p, nation, city);
		*p++ = '\t';
		p = put_phone(p, &r, nation);
		*p++ = '\n';
		out_row_end(o, p);
		progress_add(pg, 1);
	}
}

/*
 * part: p_mfgr MFGR#m (m 1..5), p_category MFGR#mc (c 1..5), p_brand1
 * MFGR#mcbb (bb 01..40, zero-padded so every brand has 9 characters:
 * MFGR#1101 .. MFGR#5540), p_name two colour words, p_color one colour.
 */
static void
gen_part(const Scale *s, int64_t first, int64_t last, Out *o, Progress *pg)
{
	(void) s;
	for (int64_t k = first; k <= last; k++)
	{
		Rng			r;
		char	   *p = out_row_begin(o);
		int			mfgr,
					cat,
					brand;

		rng_seed(&r, T_PART, k);
		p = put_int(p, k);
		*p++ = '\t';
		p = put_str(p, &colors[rng_range(&r, 0, N_COLORS - 1)]);
		*p++ = ' ';
		p = put_str(p, &colors[rng_range(&r, 0, N_COLORS - 1)]);
		*p++ = '\t';
		mfgr = (int) rng_range(&r, 1, 5);
		cat = (int) rng_range(&r, 1, 5);
		brand = (int) rng_range(&r, 1, 40);
		p = put_cstr(p, "MFGR#");
		*p++ = (char) ('0' + mfgr);
		*p++ = '\t';
		p = put_cstr(p, "MFGR#");
		*p++ = (char) ('0' + mfgr);
		*p++ = (char) ('0' + cat);
		*p++ = '\t';
		p = put_cstr(p, "MFGR#");
		*p++ = (char) ('0' + mfgr);
		*p++ = (char) ('0' + cat);
		p = put_padded(p, brand, 2);
		*p++ = '\t';
		p = put_str(p, &colors[rng_range(&r, 0, N_COLORS - 1)]);
		*p++ = '\t';
		p = put_str(p, &type_size[rng_range(&r, 0, 5)]);
		*p++ = ' ';
		p = put_str(p, &type_finish[rng_range(&r, 0, 4)]);
		*p++ = ' ';
		p = put_str(p, &type_metal[rng_range(&r, 0, 4)]);
		*p++ = '\t';
		p = put_int(p, rng_range(&r, 1, 50));
		*p++ = '\t';
		p = put_str(p, &container_size[rng_range(&r, 0, 4)]);
		*p++ = ' ';
		p = put_str(p, &container_kind[rng_range(&r, 0, 7)]);
		*p++ = '\n';
		out_row_end(o, p);
		progress_add(pg, 1);
	}
}

/* Selling season by month: Dec Christmas, Jan-Feb Winter, Mar-May Spring,
 * Jun-Aug Summer, Sep-Nov Fall. */
static const char *
selling_season(int month)
{
	if (month == 12)
		return "Christmas";
	if (month <= 2)
		return "Winter";
	if (month <= 5)
		return "Spring";
	if (month <= 8)
		return "Summer";
	return "Fall";
}

/* Fixed-date holidays: Jan 1, Jul 4, Nov 11, Dec 24, Dec 25, Dec 31. */
static int
is_holiday(int month, int mday)
{
	return (month == 1 && mday == 1) || (month == 7 && mday == 4) ||
		(month == 11 && mday == 11) ||
		(month == 12 && (mday == 24 || mday == 25 || mday == 31));
}

/*
 * date: one row per day.  d_daynuminweek 1 (Sunday) .. 7 (Saturday); weeks
 * run Sunday..Saturday, so d_lastdayinweekfl marks Saturdays; d_weeknuminyear
 * is (d_daynuminyear - 1) / 7 + 1, in 1..53.  Flags are booleans (t/f).
 */
static void
gen_date(const Scale *s, int64_t first, int64_t last, Out *o, Progress *pg)
{
	(void) s;
	for (int64_t k = first; k <= last; k++)
	{
		const Day  *d = &days[k - 1];
		char	   *p = out_row_begin(o);

		memcpy(p, d->key, 8);
		p += 8;
		*p++ = '\t';
		p = put_cstr(p, month_names[d->month - 1]);
		*p++ = ' ';
		p = put_int(p, d->mday);
		*p++ = ',';
		*p++ = ' ';
		p = put_int(p, d->year);
		*p++ = '\t';
		p = put_cstr(p, day_names[d->wday]);
		*p++ = '\t';
		p = put_cstr(p, month_names[d->month - 1]);
		*p++ = '\t';
		p = put_int(p, d->year);
		*p++ = '\t';
		p = put_int(p, d->year * 100 + d->month);
		*p++ = '\t';
		memcpy(p, month_names[d->month - 1], 3);
		p += 3;
		p = put_int(p, d->year);
		*p++ = '\t';
		p = put_int(p, d->wday + 1);
		*p++ = '\t';
		p = put_int(p, d->mday);
		*p++ = '\t';
		p = put_int(p, d->yday);
		*p++ = '\t';
		p = put_int(p, d->month);
		*p++ = '\t';
		p = put_int(p, (d->yday - 1) / 7 + 1);
		*p++ = '\t';
		p = put_cstr(p, selling_season(d->month));
		*p++ = '\t';
		*p++ = d->wday == 6 ? 't' : 'f';
		*p++ = '\t';
		*p++ = d->last_in_month ? 't' : 'f';
		*p++ = '\t';
		*p++ = is_holiday(d->month, d->mday) ? 't' : 'f';
		*p++ = '\t';
		*p++ = d->wday >= 1 && d->wday <= 5 ? 't' : 'f';
		*p++ = '\n';
		out_row_end(o, p);
		progress_add(pg, 1);
	}
}

typedef void (*GenFunc) (const Scale *, int64_t, int64_t, Out *, Progress *);

static const GenFunc generators[N_TABLES] = {
	gen_lineorder, gen_customer, gen_supplier, gen_part, gen_date
};

/* ------------------------------------------------------------------------ */
/* Driver                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct Options
{
	Scale		scale;
	int			tables[N_TABLES];	/* which tables to generate */
	const char *dir;			/* NULL: stdout */
	int64_t		nchunks,
				chunk;			/* 1-based */
	int			jobs;
	int			progress;
	int			count_only;
} Options;

/* Units (rows; orders for lineorder) of chunk k of n: [*first, *last], 1-based. */
static void
chunk_range(int64_t units, int64_t n, int64_t k, int64_t *first, int64_t *last)
{
	/* floor(k * units / n) without overflowing */
	int64_t		q = units / n,
				rem = units % n;

	*first = (k - 1) * q + (k - 1) * rem / n + 1;
	*last = k * q + k * rem / n;
}

static void
generate_table(const Options *opt, int t, int64_t nchunks, int64_t chunk)
{
	Out			o;
	Progress	pg;
	char		path[4096];
	char		label[128];
	int64_t		first,
				last;

	chunk_range(opt->scale.rows[t], nchunks, chunk, &first, &last);
	if (nchunks > 1)
		snprintf(label, sizeof(label), "%s chunk %" PRId64 "/%" PRId64,
				 table_name[t], chunk, nchunks);
	else
		snprintf(label, sizeof(label), "%s", table_name[t]);

	o.len = 0;
	o.buf = malloc(OUT_BUFSIZE);
	if (o.buf == NULL)
		die("out of memory");
	if (opt->dir)
	{
		if (nchunks > 1)
			snprintf(path, sizeof(path), "%s/%s.tsv.%" PRId64, opt->dir, table_name[t], chunk);
		else
			snprintf(path, sizeof(path), "%s/%s.tsv", opt->dir, table_name[t]);
		o.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o.fd < 0)
			die("could not create \"%s\": %s", path, strerror(errno));
		o.what = path;
	}
	else
	{
		o.fd = STDOUT_FILENO;
		o.what = "standard output";
	}

	progress_start(&pg, opt->progress, label);
	if (first <= last)
		generators[t] (&opt->scale, first, last, &o, &pg);
	out_flush(&o);
	if (opt->progress)
		progress_report(&pg, 1);
	if (opt->dir && close(o.fd) != 0)
		die("could not close \"%s\": %s", path, strerror(errno));
	free(o.buf);
}

static void
generate_chunk(const Options *opt, int64_t nchunks, int64_t chunk)
{
	for (int t = 0; t < N_TABLES; t++)
		if (opt->tables[t])
			generate_table(opt, t, nchunks, chunk);
}

static void
print_counts(const Options *opt)
{
	for (int t = 0; t < N_TABLES; t++)
	{
		int64_t		first,
					last,
					n;

		if (!opt->tables[t])
			continue;
		chunk_range(opt->scale.rows[t], opt->nchunks, opt->chunk, &first, &last);
		if (t == T_LINEORDER)
			n = count_lineorder(&opt->scale, first, last);
		else
			n = last - first + 1;
		printf("%s\t%" PRId64 "\n", table_name[t], n);
	}
}

static void
usage(FILE *f)
{
	fprintf(f,
			"Usage: %s [OPTION]...\n"
			"Generates Star Schema Benchmark data in PostgreSQL COPY text format.\n"
			"\n"
			"  -s, --scale=SF        scale factor, > 0, may be fractional (default 1)\n"
			"  -T, --table=TABLE     lineorder, customer, supplier, part, date (or date1),\n"
			"                        or all (default: all, which needs -o)\n"
			"  -o, --output=DIR      write DIR/TABLE.tsv (DIR/TABLE.tsv.K for chunk K)\n"
			"                        instead of standard output\n"
			"  -C, --chunks=N        split each table into N chunks ...\n"
			"  -S, --step=K          ... and generate only chunk K (1..N); the chunks,\n"
			"                        concatenated in order, equal the unsplit output\n"
			"  -j, --jobs=J          with -o: fork J workers writing J chunk files each\n"
			"      --count           print the row count of each table (of chunk K with\n"
			"                        -C/-S) instead of generating rows\n"
			"      --progress        report rows and rate on standard error\n"
			"  -h, --help            show this help and exit\n"
			"\n"
			"Rows: lineorder ~6,000,000*SF (1,500,000*SF orders of 1..7 lines),\n"
			"customer 30,000*SF, supplier 2,000*SF, part 200,000*floor(1+log2 SF)\n"
			"(200,000*SF below SF 1), date 2,556.  Output depends on SF only.\n",
			progname);
}

static int64_t
parse_int(const char *arg, const char *what, int64_t min)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || v < min)
		die("invalid %s: \"%s\"", what, arg);
	return (int64_t) v;
}

static int
table_by_name(const char *name)
{
	if (strcmp(name, "date1") == 0)
		return T_DATE;
	for (int t = 0; t < N_TABLES; t++)
		if (strcmp(name, table_name[t]) == 0)
			return t;
	return -1;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"scale", required_argument, NULL, 's'},
		{"table", required_argument, NULL, 'T'},
		{"output", required_argument, NULL, 'o'},
		{"chunks", required_argument, NULL, 'C'},
		{"step", required_argument, NULL, 'S'},
		{"jobs", required_argument, NULL, 'j'},
		{"count", no_argument, NULL, 'c'},
		{"progress", no_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	Options		opt;
	double		sf = 1.0;
	const char *table = "all";
	int64_t		chunk = 0;
	int			c;

	memset(&opt, 0, sizeof(opt));
	opt.nchunks = 1;
	opt.jobs = 1;

	while ((c = getopt_long(argc, argv, "s:T:o:C:S:j:h", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 's':
				{
					char	   *end;

					errno = 0;
					sf = strtod(optarg, &end);
					if (errno != 0 || end == optarg || *end != '\0' ||
						!(sf > 0.0) || !(sf <= 1e6))
						die("invalid scale factor: \"%s\" (want a number > 0)", optarg);
					break;
				}
			case 'T':
				table = optarg;
				break;
			case 'o':
				opt.dir = optarg;
				break;
			case 'C':
				opt.nchunks = parse_int(optarg, "chunk count", 1);
				if (opt.nchunks > 1000000)
					die("too many chunks: %" PRId64, opt.nchunks);
				break;
			case 'S':
				chunk = parse_int(optarg, "chunk number", 1);
				break;
			case 'j':
				opt.jobs = (int) parse_int(optarg, "job count", 1);
				if (opt.jobs > 1024)
					die("too many jobs: %d", opt.jobs);
				break;
			case 'c':
				opt.count_only = 1;
				break;
			case 'p':
				opt.progress = 1;
				break;
			case 'h':
				usage(stdout);
				return 0;
			default:
				usage(stderr);
				return 2;
		}
	}
	if (optind < argc)
		die("unexpected argument \"%s\" (try --help)", argv[optind]);

	if (strcmp(table, "all") == 0)
	{
		for (int t = 0; t < N_TABLES; t++)
			opt.tables[t] = 1;
	}
	else
	{
		int			t = table_by_name(table);

		if (t < 0)
			die("unknown table \"%s\" (lineorder, customer, supplier, part, date or all)", table);
		opt.tables[t] = 1;
	}

	if (chunk == 0)
	{
		if (opt.nchunks > 1)
			die("-C %" PRId64 " needs -S K to say which chunk to generate", opt.nchunks);
		chunk = 1;
	}
	if (chunk > opt.nchunks)
		die("chunk %" PRId64 " out of range 1..%" PRId64, chunk, opt.nchunks);
	opt.chunk = chunk;
	if (opt.jobs > 1 && opt.nchunks > 1)
		die("-j cannot be combined with -C/-S");
	if (opt.jobs > 1 && opt.dir == NULL && !opt.count_only)
		die("-j needs -o DIR (workers write one file per chunk)");
	if (strcmp(table, "all") == 0 && opt.dir == NULL && !opt.count_only)
		die("-T all needs -o DIR; to write to standard output, choose one table with -T");

	init_tables();
	scale_init(&opt.scale, sf);

	if (opt.count_only)
	{
		print_counts(&opt);
		return 0;
	}
	if (opt.dir)
	{
		struct stat st;

		if (stat(opt.dir, &st) != 0 || !S_ISDIR(st.st_mode))
			die("output directory \"%s\" does not exist", opt.dir);
	}

	if (opt.jobs == 1)
	{
		generate_chunk(&opt, opt.nchunks, opt.chunk);
		return 0;
	}

	/* -j J: J workers, worker k writing chunk k of J of every table */
	{
		pid_t	   *pids = calloc((size_t) opt.jobs, sizeof(pid_t));
		int			failed = 0;

		if (pids == NULL)
			die("out of memory");
		fflush(NULL);
		for (int k = 1; k <= opt.jobs; k++)
		{
			pid_t		pid = fork();

			if (pid < 0)
				die("could not fork: %s", strerror(errno));
			if (pid == 0)
			{
				generate_chunk(&opt, opt.jobs, k);
				_exit(0);
			}
			pids[k - 1] = pid;
		}
		for (int k = 0; k < opt.jobs; k++)
		{
			int			status;

			while (waitpid(pids[k], &status, 0) < 0)
			{
				if (errno != EINTR)
					die("waitpid failed: %s", strerror(errno));
			}
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				failed++;
		}
		free(pids);
		if (failed)
			die("%d of %d workers failed", failed, opt.jobs);
	}
	return 0;
}
