/*-------------------------------------------------------------------------
 *
 * config.c
 *		fluent2arrow: the configuration file (its format is in
 *		doc/fluent2arrow.md): global "key = value" lines, then one
 *		"[route NAME]" section per output with its tag patterns, directory,
 *		rotation and typed columns; the tag matching of routes; and the
 *		configuration in force (g_cfg, replaced by a reload).
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fluent2arrow.h"

/* the configuration in force, and its generation (changes at each reload) */
Config	   *g_cfg;
unsigned	g_cfg_generation;

/* Parses "16MB", "512k", "100": bytes; -1 if not a size */
int64_t
parse_size(const char *s)
{
	char	   *end;
	long long	v;
	int64_t		mul = 1;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || v < 0)
		return -1;
	while (*end == ' ')
		end++;
	switch (toupper((unsigned char) *end))
	{
		case 'K':
			mul = 1024;
			break;
		case 'M':
			mul = 1024 * 1024;
			break;
		case 'G':
			mul = 1024LL * 1024 * 1024;
			break;
		case '\0':
			return v;
		case 'B':
			return end[1] == '\0' ? v : -1;
		default:
			return -1;
	}
	end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0' || v > INT64_MAX / mul)
		return -1;
	return v * mul;
}

/* "500ms", "60s", "5m", "60" (seconds): milliseconds; -1 if not a duration */
static int64_t
parse_ms(const char *s)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || v < 0)
		return -1;
	if (strcmp(end, "ms") == 0)
		return (int64_t) v;
	if (*end == '\0' || strcmp(end, "s") == 0)
		return (int64_t) (v * 1000);
	if (strcmp(end, "m") == 0)
		return (int64_t) (v * 60000);
	if (strcmp(end, "h") == 0)
		return (int64_t) (v * 3600000);
	return -1;
}

static bool
parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "on") == 0 || strcmp(s, "true") == 0 || strcmp(s, "yes") == 0 || strcmp(s, "1") == 0)
		*out = true;
	else if (strcmp(s, "off") == 0 || strcmp(s, "false") == 0 || strcmp(s, "no") == 0 || strcmp(s, "0") == 0)
		*out = false;
	else
		return false;
	return true;
}

/* A path relative to the configuration file's directory */
static char *
config_path(const Config *cfg, const char *v)
{
	const char *slash = strrchr(cfg->path, '/');

	if (v[0] == '/' || slash == NULL)
		return xstrdup(v);
	return xasprintf("%.*s/%s", (int) (slash - cfg->path), cfg->path, v);
}

/* Integer type names: arrow type, signedness, width */
static const struct
{
	const char *name;
	ArrowTypeId id;
	bool		is_signed;
	int			bits;
}			int_types[] = {
	{"int8", ARROW_TYPE_INT8, true, 8}, {"int16", ARROW_TYPE_INT16, true, 16},
	{"int32", ARROW_TYPE_INT32, true, 32}, {"int64", ARROW_TYPE_INT64, true, 64},
	{"uint8", ARROW_TYPE_UINT8, false, 8}, {"uint16", ARROW_TYPE_UINT16, false, 16},
	{"uint32", ARROW_TYPE_UINT32, false, 32}, {"uint64", ARROW_TYPE_UINT64, false, 64},
};

static int64_t
unit_per_second(ArrowTimeUnit u)
{
	return u == ARROW_UNIT_SECOND ? 1 : u == ARROW_UNIT_MILLI ? 1000 :
		u == ARROW_UNIT_MICRO ? 1000000 : 1000000000;
}

/* "s", "ms", "us", "ns" */
static bool
parse_unit(const char *s, size_t len, ArrowTimeUnit *u)
{
	static const char *names[] = {"s", "ms", "us", "ns"};

	for (int i = 0; i < 4; i++)
		if (strlen(names[i]) == len && strncmp(s, names[i], len) == 0)
		{
			*u = (ArrowTimeUnit) i;
			return true;
		}
	return false;
}

/* Time-related types: timestamp[UNIT], timestamptz[UNIT], time32/64[UNIT], date32/64 */
static bool
parse_time_type(const char *t, Column *c)
{
	const char *br = strchr(t, '[');
	size_t		base = br ? (size_t) (br - t) : strlen(t);
	ArrowTimeUnit unit = ARROW_UNIT_MICRO;

	if (br && (t[strlen(t) - 1] != ']' ||
			   !parse_unit(br + 1, strlen(br + 1) - 1, &unit)))
		return false;
	if (strncmp(t, "date32", base) == 0 && base == 6 && !br)
	{
		c->kind = CK_DATE;
		c->type.id = ARROW_TYPE_DATE32;
		c->per_second = 0;		/* days */
	}
	else if (strncmp(t, "date64", base) == 0 && base == 6 && !br)
	{
		c->kind = CK_DATE;
		c->type.id = ARROW_TYPE_DATE64;
		c->per_second = 1000;
	}
	else if ((base == 9 && strncmp(t, "timestamp", 9) == 0) ||
			 (base == 11 && strncmp(t, "timestamptz", 11) == 0))
	{
		c->kind = CK_TIMESTAMP;
		c->type.id = ARROW_TYPE_TIMESTAMP;
		c->type.unit = unit;
		c->type.timezone = base == 11 ? xstrdup("UTC") : NULL;
	}
	else if ((base == 6 && strncmp(t, "time32", 6) == 0 && br && unit <= ARROW_UNIT_MILLI) ||
			 (base == 6 && strncmp(t, "time64", 6) == 0 && br && unit >= ARROW_UNIT_MICRO))
	{
		c->kind = CK_TIMEOFDAY;
		c->type.id = unit <= ARROW_UNIT_MILLI ? ARROW_TYPE_TIME32 : ARROW_TYPE_TIME64;
		c->type.unit = unit;
	}
	else
		return false;
	if (c->kind != CK_DATE)
		c->per_second = unit_per_second(unit);
	return true;
}

/* Fills c's kind and type from a type name; false if unknown */
static bool
parse_type(const char *t, Column *c)
{
	int			p,
				s,
				n;

	for (size_t i = 0; i < sizeof(int_types) / sizeof(int_types[0]); i++)
		if (strcmp(t, int_types[i].name) == 0)
		{
			int			bits = int_types[i].bits;

			c->type.id = int_types[i].id;
			c->kind = int_types[i].is_signed ? CK_INT : CK_UINT;
			c->imax = bits == 64 ? INT64_MAX : (int64_t) ((1ULL << (bits - 1)) - 1);
			c->imin = -c->imax - 1;
			c->umax = bits == 64 ? UINT64_MAX : (1ULL << bits) - 1;
			return true;
		}
	if (strcmp(t, "bool") == 0)
		c->kind = CK_BOOL, c->type.id = ARROW_TYPE_BOOL;
	else if (strcmp(t, "float16") == 0)
		c->kind = CK_FLOAT, c->type.id = ARROW_TYPE_FLOAT16;
	else if (strcmp(t, "float32") == 0)
		c->kind = CK_FLOAT, c->type.id = ARROW_TYPE_FLOAT32;
	else if (strcmp(t, "float64") == 0)
		c->kind = CK_FLOAT, c->type.id = ARROW_TYPE_FLOAT64;
	else if (strcmp(t, "utf8") == 0)
		c->kind = CK_UTF8, c->type.id = ARROW_TYPE_UTF8;
	else if (strcmp(t, "binary") == 0)
		c->kind = CK_BINARY, c->type.id = ARROW_TYPE_BINARY;
	else if (strcmp(t, "large_utf8") == 0)
		c->kind = CK_UTF8, c->type.id = ARROW_TYPE_LARGE_UTF8;
	else if (strcmp(t, "large_binary") == 0)
		c->kind = CK_BINARY, c->type.id = ARROW_TYPE_LARGE_BINARY;
	else if (sscanf(t, "fixed_size_binary(%d)%n", &p, &n) == 1 && t[n] == '\0')
	{
		if (p < 1 || p > 1024 * 1024)
			return false;
		c->kind = CK_BINARY;
		c->type.id = ARROW_TYPE_FIXED_SIZE_BINARY;
		c->type.byte_width = p;
	}
	else if (strncmp(t, "duration[", 9) == 0)
	{
		ArrowTimeUnit unit;

		if (t[strlen(t) - 1] != ']' || !parse_unit(t + 9, strlen(t) - 10, &unit))
			return false;
		c->kind = CK_INT;		/* integers in the unit */
		c->type.id = ARROW_TYPE_DURATION;
		c->type.unit = unit;
		c->imax = INT64_MAX;
		c->imin = INT64_MIN;
		c->umax = INT64_MAX;
	}
	else if (sscanf(t, "decimal(%d,%d)%n", &p, &s, &n) == 2 && t[n] == '\0')
	{
		if (p < 1 || p > 38 || s < 0 || s > p)
			return false;
		c->kind = CK_DECIMAL;
		c->type.id = ARROW_TYPE_DECIMAL128;
		c->type.precision = p;
		c->type.scale = s;
	}
	else
		return parse_time_type(t, c);
	return true;
}

/* "NAME TYPE [required]" (the type without spaces) */
static bool
add_column(Route *r, const char *v, char *errbuf, size_t errlen)
{
	char		name[256],
				type[64],
				flag[32] = "";
	Column	   *c;
	int			n = sscanf(v, "%255s %63s %31s", name, type, flag);

	if (n < 2 || (n == 3 && strcmp(flag, "required") != 0))
	{
		snprintf(errbuf, errlen, "column \"%s\": expected \"NAME TYPE [required]\"", v);
		return false;
	}
	r->columns = xrealloc(r->columns, sizeof(Column) * (r->n_columns + 1));
	c = &r->columns[r->n_columns];
	memset(c, 0, sizeof(*c));
	if (!parse_type(type, c))
	{
		snprintf(errbuf, errlen, "column \"%s\": unknown type \"%s\"", name, type);
		return false;
	}
	c->name = xstrdup(name);
	c->name_len = strlen(name);
	c->required = n == 3;
	r->n_columns++;
	return true;
}

/* The tag or time column named v */
static void
add_special(Route *r, const char *v, ColKind kind)
{
	Column	   *c;

	r->columns = xrealloc(r->columns, sizeof(Column) * (r->n_columns + 1));
	c = &r->columns[r->n_columns++];
	memset(c, 0, sizeof(*c));
	c->name = xstrdup(v);
	c->name_len = strlen(v);
	c->kind = kind;
	if (kind == CK_TAG)
		c->type.id = ARROW_TYPE_UTF8;
	else
	{
		c->type.id = ARROW_TYPE_TIMESTAMP;
		c->type.unit = ARROW_UNIT_MICRO;
		c->type.timezone = xstrdup("UTC");
		c->per_second = 1000000;
	}
}

/* One "key = value" of a route section */
static bool
route_setting(Config *cfg, Route *r, const char *k, const char *v,
			  char *errbuf, size_t errlen)
{
	if (strcmp(k, "match") == 0)
	{
		char	   *copy = xstrdup(v),
				   *save = NULL;

		for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
		{
			r->match = xrealloc(r->match, sizeof(char *) * (r->n_match + 1));
			r->match[r->n_match++] = xstrdup(t);
		}
		free(copy);
	}
	else if (strcmp(k, "dir") == 0)
		r->dir = config_path(cfg, v);
	else if (strcmp(k, "prefix") == 0)
	{
		if (*v == '\0' || *v == '.' || strchr(v, '/') != NULL)
			return snprintf(errbuf, errlen, "prefix: \"%s\" must be a file name that does not start with a dot", v), false;
		free(r->prefix);
		r->prefix = xstrdup(v);
	}
	else if (strcmp(k, "strict") == 0)
		return parse_bool(v, &r->strict) ||
			(snprintf(errbuf, errlen, "strict: \"%s\" is not on or off", v), false);
	else if (strcmp(k, "rotate_rows") == 0 || strcmp(k, "batch_rows") == 0)
	{
		int64_t		n = parse_size(v);

		if (n <= 0)
			return snprintf(errbuf, errlen, "%s: \"%s\" is not a positive number", k, v), false;
		*(k[0] == 'r' ? &r->rotate_rows : &r->batch_rows) = n;
	}
	else if (strcmp(k, "rotate_size") == 0)
	{
		if ((r->rotate_bytes = parse_size(v)) <= 0)
			return snprintf(errbuf, errlen, "rotate_size: \"%s\" is not a size", v), false;
	}
	else if (strcmp(k, "rotate_age") == 0)
	{
		if ((r->rotate_ms = parse_ms(v)) <= 0)
			return snprintf(errbuf, errlen, "rotate_age: \"%s\" is not a duration", v), false;
	}
	else if (strcmp(k, "column") == 0)
		return add_column(r, v, errbuf, errlen);
	else if (strcmp(k, "tag_column") == 0)
		add_special(r, v, CK_TAG);
	else if (strcmp(k, "time_column") == 0)
		add_special(r, v, CK_TIME);
	else
		return snprintf(errbuf, errlen, "unknown route setting \"%s\"", k), false;
	return true;
}

/* One global "key = value" */
static bool
global_setting(Config *cfg, const char *k, const char *v, char *errbuf, size_t errlen)
{
	if (strcmp(k, "listen") == 0)
	{
		const char *colon = strrchr(v, ':');

		free(cfg->listen_host);
		cfg->listen_host = NULL;
		cfg->listen_port = 0;
		if (strcmp(v, "off") == 0)
			return true;
		if (colon == NULL || atoi(colon + 1) <= 0 || atoi(colon + 1) > 65535)
			return snprintf(errbuf, errlen, "listen: expected HOST:PORT or off, not \"%s\"", v), false;
		cfg->listen_host = xstrndup(v, colon - v);
		cfg->listen_port = atoi(colon + 1);
	}
	else if (strcmp(k, "unix_socket") == 0)
		cfg->unix_path = config_path(cfg, v);
	else if (strcmp(k, "shared_key") == 0)
		cfg->shared_key = xstrdup(v);
	else if (strcmp(k, "self_hostname") == 0)
		free(cfg->self_hostname), cfg->self_hostname = xstrdup(v);
	else if (strcmp(k, "spool_dir") == 0)
		free(cfg->spool_dir), cfg->spool_dir = config_path(cfg, v);
	else if (strcmp(k, "deadletter") == 0)
		free(cfg->deadletter_path), cfg->deadletter_path = config_path(cfg, v);
	else if (strcmp(k, "log") == 0)
		cfg->log_path = config_path(cfg, v);
	else if (strcmp(k, "max_frame") == 0 || strcmp(k, "max_buffer") == 0 ||
			 strcmp(k, "wal_segment") == 0)
	{
		int64_t		n = parse_size(v);

		if (n < 1024)
			return snprintf(errbuf, errlen, "%s: \"%s\" is not a size of at least 1kB", k, v), false;
		/* one value of a frame must fit a utf8/binary batch (32-bit offsets) */
		if (k[4] == 'f' && n > 1024LL * 1024 * 1024)
			return snprintf(errbuf, errlen, "max_frame: \"%s\" is more than 1GB", v), false;
		*(k[0] == 'w' ? &cfg->wal_segment : k[4] == 'f' ? &cfg->max_frame : &cfg->max_buffer) = n;
	}
	else if (strcmp(k, "stall_timeout") == 0)
	{
		if ((cfg->stall_ms = parse_ms(v)) <= 0)
			return snprintf(errbuf, errlen, "stall_timeout: \"%s\" is not a duration", v), false;
	}
	else if (strcmp(k, "max_connections") == 0 || strcmp(k, "stats_interval") == 0)
	{
		int64_t		n = parse_size(v);

		if (n < 0 || n > 1000000)
			return snprintf(errbuf, errlen, "%s: \"%s\" is not a number", k, v), false;
		*(k[0] == 'm' ? &cfg->max_connections : &cfg->stats_interval) = (int) n;
	}
	else
		return snprintf(errbuf, errlen, "unknown setting \"%s\"", k), false;
	return true;
}

/* Defaults of a new config (paths relative to the file) */
static Config *
config_new(const char *path)
{
	Config	   *cfg = xcalloc(1, sizeof(Config));

	cfg->path = xstrdup(path);
	cfg->listen_host = xstrdup("127.0.0.1");
	cfg->listen_port = 24224;
	cfg->self_hostname = xstrdup("fluent2arrow");
	cfg->spool_dir = config_path(cfg, "spool");
	cfg->deadletter_path = config_path(cfg, "deadletter.jsonl");
	cfg->max_frame = 16 * 1024 * 1024;
	cfg->max_buffer = 256 * 1024 * 1024;
	cfg->wal_segment = 64 * 1024 * 1024;
	cfg->max_connections = 1024;
	cfg->stall_ms = 10000;
	cfg->stats_interval = 0;
	return cfg;
}

static Route *
route_new(Config *cfg, const char *name)
{
	Route	   *r;

	cfg->routes = xrealloc(cfg->routes, sizeof(Route) * (cfg->n_routes + 1));
	r = &cfg->routes[cfg->n_routes++];
	memset(r, 0, sizeof(*r));
	r->name = xstrdup(name);
	r->rotate_rows = 10 * 1000 * 1000;
	r->rotate_bytes = 256 * 1024 * 1024;
	r->rotate_ms = 60000;
	r->batch_rows = 65536;
	return r;
}

/* Checks a route and builds its schema */
static bool
route_check(Route *r, char *errbuf, size_t errlen)
{
	if (r->n_match == 0 || r->dir == NULL || r->n_columns == 0)
		return snprintf(errbuf, errlen, "route \"%s\" needs match, dir and at least one column", r->name), false;
	for (int i = 0; i < r->n_columns; i++)
		for (int j = 0; j < i; j++)
			if (strcmp(r->columns[i].name, r->columns[j].name) == 0)
				return snprintf(errbuf, errlen, "route \"%s\": column \"%s\" twice", r->name, r->columns[i].name), false;
	if (r->prefix == NULL && (r->name[0] == '\0' || r->name[0] == '.' || strchr(r->name, '/')))
		return snprintf(errbuf, errlen, "route \"%s\": its name is no file name prefix; set prefix", r->name), false;
	if (r->prefix == NULL)
		r->prefix = xstrdup(r->name);
	r->schema.n_fields = r->n_columns;
	r->schema.fields = xcalloc(r->n_columns, sizeof(ArrowField));
	for (int i = 0; i < r->n_columns; i++)
	{
		r->schema.fields[i].name = r->columns[i].name;
		r->schema.fields[i].nullable = true;
		r->schema.fields[i].type = r->columns[i].type;
	}
	return true;
}

/* Whether paths a and b name the same directory (by inode when both exist) */
static bool
same_dir(const char *a, const char *b)
{
	struct stat sa,
				sb;
	size_t		la = strlen(a),
				lb = strlen(b);

	if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	while (la > 1 && a[la - 1] == '/')
		la--;
	while (lb > 1 && b[lb - 1] == '/')
		lb--;
	return la == lb && memcmp(a, b, la) == 0;
}

/* Whether the file at path f lies directly in directory dir */
static bool
file_in_dir(const char *f, const char *dir)
{
	const char *slash = strrchr(f, '/');
	char	   *parent = slash ? xstrndup(f, slash == f ? 1 : (size_t) (slash - f)) : xstrdup(".");
	bool		in = same_dir(parent, dir);

	free(parent);
	return in;
}

/*
 * No file of the sink's own (spool, dead letters, log, socket) may lie in
 * a route's output directory: arrow_fdw's dir option would read it as an
 * Arrow file and fail.
 */
static bool
check_output_dirs(const Config *cfg, char *errbuf, size_t errlen)
{
	for (int i = 0; i < cfg->n_routes; i++)
	{
		const Route *r = &cfg->routes[i];
		const char *what =
			same_dir(cfg->spool_dir, r->dir) ? "spool_dir is" :
			file_in_dir(cfg->deadletter_path, r->dir) ? "the dead-letter file is" :
			cfg->log_path && file_in_dir(cfg->log_path, r->dir) ? "the log file is" :
			cfg->unix_path && file_in_dir(cfg->unix_path, r->dir) ? "unix_socket is" : NULL;

		if (what)
			return snprintf(errbuf, errlen, "route \"%s\": %s in its output directory \"%s\" (arrow_fdw would read it as an Arrow file)",
							r->name, what, r->dir), false;
	}
	return true;
}

/* Strips blanks at both ends, in place */
static char *
trim(char *s)
{
	char	   *e;

	while (isspace((unsigned char) *s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char) e[-1]))
		*--e = '\0';
	return s;
}

/* Reads the file; NULL (message in errbuf) when it is not valid */
Config *
config_load(const char *path, char *errbuf, size_t errlen)
{
	FILE	   *f = fopen(path, "r");
	Config	   *cfg;
	Route	   *route = NULL;
	char		line[4096],
				msg[512];
	int			lineno = 0;

	if (f == NULL)
		return snprintf(errbuf, errlen, "cannot open \"%s\": %s", path, strerror(errno)), NULL;
	cfg = config_new(path);
	while (fgets(line, sizeof(line), f))
	{
		char	   *s = trim(line),
				   *eq;
		bool		ok;

		lineno++;
		if (*s == '\0' || *s == '#')
			continue;
		if (*s == '[')
		{
			char		name[256];

			if (sscanf(s, "[route %255[^]]]", name) != 1)
			{
				snprintf(msg, sizeof(msg), "expected [route NAME]");
				goto bad;
			}
			route = route_new(cfg, trim(name));
			continue;
		}
		eq = strchr(s, '=');
		if (eq == NULL)
		{
			snprintf(msg, sizeof(msg), "expected KEY = VALUE");
			goto bad;
		}
		*eq = '\0';
		ok = route ? route_setting(cfg, route, trim(s), trim(eq + 1), msg, sizeof(msg)) :
			global_setting(cfg, trim(s), trim(eq + 1), msg, sizeof(msg));
		if (!ok)
			goto bad;
	}
	fclose(f);
	for (int i = 0; i < cfg->n_routes; i++)
		if (!route_check(&cfg->routes[i], errbuf, errlen))
		{
			config_free(cfg);
			return NULL;
		}
	if (cfg->n_routes == 0)
	{
		snprintf(errbuf, errlen, "%s: no [route NAME] section", path);
		config_free(cfg);
		return NULL;
	}
	/* one frame of max_frame bytes must always fit, whatever else waits */
	if (cfg->max_buffer < cfg->max_frame + (1 << 20))
	{
		snprintf(errbuf, errlen, "%s: max_buffer (%lld bytes) must be at least max_frame + 1MB",
				 path, (long long) cfg->max_buffer);
		config_free(cfg);
		return NULL;
	}
	if (!check_output_dirs(cfg, errbuf, errlen))
	{
		config_free(cfg);
		return NULL;
	}
	return cfg;
bad:
	snprintf(errbuf, errlen, "%s:%d: %s", path, lineno, msg);
	fclose(f);
	config_free(cfg);
	return NULL;
}

void
config_free(Config *cfg)
{
	for (int i = 0; i < cfg->n_routes; i++)
	{
		Route	   *r = &cfg->routes[i];

		for (int j = 0; j < r->n_match; j++)
			free(r->match[j]);
		for (int j = 0; j < r->n_columns; j++)
		{
			free(r->columns[j].name);
			free(r->columns[j].type.timezone);
		}
		free(r->match);
		free(r->columns);
		free(r->schema.fields);
		free(r->name);
		free(r->dir);
		free(r->prefix);
	}
	free(cfg->routes);
	free(cfg->path);
	free(cfg->listen_host);
	free(cfg->unix_path);
	free(cfg->shared_key);
	free(cfg->self_hostname);
	free(cfg->spool_dir);
	free(cfg->deadletter_path);
	free(cfg->log_path);
	free(cfg);
}

/*
 * Fluentd's tag patterns: parts separated by dots; "*" matches one part,
 * "**" zero or more parts; other parts match exactly.
 */
static bool
tag_match(const char *pat, const char *tag, const char *end)
{
	const char *pend;
	const char *dot;
	const char *tend;

	if (pat[0] == '*' && pat[1] == '*' && (pat[2] == '.' || pat[2] == '\0'))
	{
		if (pat[2] == '\0')
			return true;
		for (const char *t = tag; t <= end; t++)
			if ((t == tag || t[-1] == '.') && tag_match(pat + 3, t, end))
				return true;
		return false;
	}
	pend = strchr(pat, '.');
	if (pend == NULL)
		pend = pat + strlen(pat);
	dot = memchr(tag, '.', end - tag);
	tend = dot ? dot : end;
	if (pend - pat == 1 && pat[0] == '*')
	{
		if (tend == tag)
			return false;
	}
	else if (tend - tag != pend - pat || memcmp(pat, tag, tend - tag) != 0)
		return false;
	if (*pend == '\0')
		return tend == end;
	if (tend == end)
		return strcmp(pend, ".**") == 0;	/* "a.**" matches "a" too */
	return tag_match(pend + 1, tend + 1, end);
}

/* The route whose patterns match tag first, or NULL */
Route *
config_route(Config *cfg, const char *tag, size_t len)
{
	for (int i = 0; i < cfg->n_routes; i++)
		for (int j = 0; j < cfg->routes[i].n_match; j++)
			if (tag_match(cfg->routes[i].match[j], tag, tag + len))
				return &cfg->routes[i];
	return NULL;
}
