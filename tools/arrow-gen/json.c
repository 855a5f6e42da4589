/*-------------------------------------------------------------------------
 *
 * json.c
 *		Recursive-descent JSON parser used by arrow-gen (see json.h).
 *
 * Nesting is limited to JSON_MAX_DEPTH levels so that hostile input cannot
 * exhaust the stack.
 *
 *-------------------------------------------------------------------------
 */
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define JSON_MAX_DEPTH	512

typedef struct JsonParser
{
	const char *p;
	const char *end;
	int			line;
	char	   *errbuf;
	size_t		errlen;
	bool		failed;
} JsonParser;

static JsonValue *parse_value(JsonParser *ps, int depth);

static void
parse_error(JsonParser *ps, const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (ps->failed)
		return;
	ps->failed = true;
	n = snprintf(ps->errbuf, ps->errlen, "line %d: ", ps->line);
	if (n < 0 || (size_t) n >= ps->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(ps->errbuf + n, ps->errlen - n, fmt, ap);
	va_end(ap);
}

static void
skip_space(JsonParser *ps)
{
	while (ps->p < ps->end &&
		   (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
	{
		if (*ps->p == '\n')
			ps->line++;
		ps->p++;
	}
}

static JsonValue *
new_value(JsonParser *ps, JsonType type)
{
	JsonValue  *v = calloc(1, sizeof(JsonValue));

	if (v == NULL)
	{
		parse_error(ps, "out of memory");
		return NULL;
	}
	v->type = type;
	v->line = ps->line;
	return v;
}

void
json_free(JsonValue *v)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < v->n; i++)
	{
		json_free(v->items[i]);
		if (v->keys != NULL)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

/* A growable byte string for decoding */
typedef struct StrBuf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} StrBuf;

static bool
sb_put(JsonParser *ps, StrBuf *sb, const char *s, size_t n)
{
	if (sb->len + n + 1 > sb->cap)
	{
		size_t		cap = sb->cap ? sb->cap : 32;
		char	   *p;

		while (cap < sb->len + n + 1)
			cap *= 2;
		p = realloc(sb->data, cap);
		if (p == NULL)
		{
			parse_error(ps, "out of memory");
			return false;
		}
		sb->data = p;
		sb->cap = cap;
	}
	memcpy(sb->data + sb->len, s, n);
	sb->len += n;
	sb->data[sb->len] = '\0';
	return true;
}

/* Reads the 4 hex digits after "\u" */
static bool
read_u16(JsonParser *ps, unsigned *out)
{
	unsigned	v = 0;

	if (ps->end - ps->p < 4)
	{
		parse_error(ps, "truncated \\u escape");
		return false;
	}
	for (int i = 0; i < 4; i++)
	{
		int			d = hex_digit(ps->p[i]);

		if (d < 0)
		{
			parse_error(ps, "invalid \\u escape");
			return false;
		}
		v = v * 16 + (unsigned) d;
	}
	ps->p += 4;
	*out = v;
	return true;
}

static bool
put_utf8(JsonParser *ps, StrBuf *sb, unsigned cp)
{
	char		u[4];
	size_t		n;

	if (cp < 0x80)
		u[0] = (char) cp, n = 1;
	else if (cp < 0x800)
	{
		u[0] = (char) (0xc0 | (cp >> 6));
		u[1] = (char) (0x80 | (cp & 0x3f));
		n = 2;
	}
	else if (cp < 0x10000)
	{
		u[0] = (char) (0xe0 | (cp >> 12));
		u[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char) (0x80 | (cp & 0x3f));
		n = 3;
	}
	else
	{
		u[0] = (char) (0xf0 | (cp >> 18));
		u[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char) (0x80 | (cp & 0x3f));
		n = 4;
	}
	return sb_put(ps, sb, u, n);
}

/*
 * The code point of a \u escape (ps->p after the "\u"), a surrogate pair
 * taken together; false (with the error set) for bad hex or an unpaired
 * surrogate.
 */
static bool
parse_u_escape(JsonParser *ps, unsigned *cp)
{
	unsigned	lo;

	if (!read_u16(ps, cp))
		return false;
	if (*cp >= 0xdc00 && *cp <= 0xdfff)
	{
		parse_error(ps, "unpaired low surrogate in \\u escape");
		return false;
	}
	if (*cp < 0xd800 || *cp > 0xdbff)
		return true;
	if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
	{
		parse_error(ps, "unpaired high surrogate in \\u escape");
		return false;
	}
	ps->p += 2;
	if (!read_u16(ps, &lo))
		return false;
	if (lo < 0xdc00 || lo > 0xdfff)
	{
		parse_error(ps, "unpaired high surrogate in \\u escape");
		return false;
	}
	*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
	return true;
}

/* Decodes the escape at ps->p (after its backslash) into sb */
static bool
parse_escape(JsonParser *ps, StrBuf *sb)
{
	static const char from[] = "\"\\/bfnrt";
	static const char to[] = "\"\\/\b\f\n\r\t";
	char		c = *ps->p++;
	const char *simple = c != '\0' ? strchr(from, c) : NULL;
	unsigned	cp;

	if (simple != NULL)
		return sb_put(ps, sb, &to[simple - from], 1);
	if (c != 'u')
	{
		parse_error(ps, "invalid escape \\%c", c);
		return false;
	}
	return parse_u_escape(ps, &cp) && put_utf8(ps, sb, cp);
}

/* Parses a string literal (ps->p at the opening quote) into sb */
static bool
parse_string_into(JsonParser *ps, StrBuf *sb)
{
	ps->p++;					/* the quote */
	if (!sb_put(ps, sb, "", 0))
		return false;
	while (ps->p < ps->end && *ps->p != '"')
	{
		const char *run = ps->p;

		while (ps->p < ps->end && *ps->p != '"' && *ps->p != '\\' &&
			   (unsigned char) *ps->p >= 0x20)
			ps->p++;
		if (ps->p > run && !sb_put(ps, sb, run, ps->p - run))
			return false;
		if (ps->p >= ps->end || *ps->p == '"')
			break;
		if ((unsigned char) *ps->p < 0x20)
		{
			parse_error(ps, "control character in a string");
			return false;
		}
		/* an escape */
		if (++ps->p >= ps->end)
			break;
		if (!parse_escape(ps, sb))
			return false;
	}
	if (ps->p >= ps->end)
	{
		parse_error(ps, "unterminated string");
		return false;
	}
	ps->p++;					/* the closing quote */
	return true;
}

static JsonValue *
parse_string(JsonParser *ps)
{
	JsonValue  *v = new_value(ps, JSON_STRING);
	StrBuf		sb = {NULL, 0, 0};

	if (v == NULL)
		return NULL;
	if (!parse_string_into(ps, &sb))
	{
		free(sb.data);
		json_free(v);
		return NULL;
	}
	v->str = sb.data;
	v->len = sb.len;
	return v;
}

static bool
is_digit(const JsonParser *ps)
{
	return ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9';
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static JsonValue *
parse_number(JsonParser *ps)
{
	const char *start = ps->p;
	JsonValue  *v;

	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (!is_digit(ps))
		goto bad;
	if (*ps->p == '0')
		ps->p++;
	else
		while (is_digit(ps))
			ps->p++;
	if (ps->p < ps->end && *ps->p == '.')
	{
		ps->p++;
		if (!is_digit(ps))
			goto bad;
		while (is_digit(ps))
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E'))
	{
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (!is_digit(ps))
			goto bad;
		while (is_digit(ps))
			ps->p++;
	}
	v = new_value(ps, JSON_NUMBER);
	if (v == NULL)
		return NULL;
	v->len = ps->p - start;
	v->str = malloc(v->len + 1);
	if (v->str == NULL)
	{
		parse_error(ps, "out of memory");
		json_free(v);
		return NULL;
	}
	memcpy(v->str, start, v->len);
	v->str[v->len] = '\0';
	return v;

bad:
	parse_error(ps, "invalid number");
	return NULL;
}

/* Appends item (and key, for objects) to v; frees them on failure */
static bool
add_item(JsonParser *ps, JsonValue *v, size_t *cap, JsonValue *item, char *key)
{
	if (v->n == *cap)
	{
		size_t		ncap = *cap ? 2 * *cap : 8;
		JsonValue **items = realloc(v->items, ncap * sizeof(JsonValue *));

		if (items != NULL)
			v->items = items;
		if (items != NULL && v->type == JSON_OBJECT)
		{
			char	  **keys = realloc(v->keys, ncap * sizeof(char *));

			if (keys == NULL)
				items = NULL;
			else
				v->keys = keys;
		}
		if (items == NULL)
		{
			parse_error(ps, "out of memory");
			json_free(item);
			free(key);
			return false;
		}
		*cap = ncap;
	}
	v->items[v->n] = item;
	if (v->type == JSON_OBJECT)
		v->keys[v->n] = key;
	v->n++;
	return true;
}

/*
 * After an item of an array or object: 1 at a comma (another item
 * follows), 0 at the closing bracket 'close', -1 (error 'msg') otherwise.
 * Consumes the comma or bracket.
 */
static int
after_item(JsonParser *ps, char close, const char *msg)
{
	skip_space(ps);
	if (ps->p < ps->end && (*ps->p == ',' || *ps->p == close))
		return *ps->p++ == ',';
	parse_error(ps, "%s", msg);
	return -1;
}

/*
 * The key of the next member of object v and its colon: a new string (a C
 * string, not yet in v), or NULL with the error set.
 */
static char *
parse_key(JsonParser *ps, const JsonValue *v)
{
	StrBuf		key = {NULL, 0, 0};

	skip_space(ps);
	if (ps->p >= ps->end || *ps->p != '"')
	{
		parse_error(ps, "expected a string key in an object");
		return NULL;
	}
	if (parse_string_into(ps, &key))
	{
		if (strlen(key.data) != key.len)
			parse_error(ps, "object key with a U+0000 character (names are C strings in arrow.h)");
		else if (json_get(v, key.data) != NULL)
			parse_error(ps, "duplicate key \"%s\"", key.data);
		else
		{
			skip_space(ps);
			if (ps->p < ps->end && *ps->p == ':')
			{
				ps->p++;
				return key.data;
			}
			parse_error(ps, "expected ':' after an object key");
		}
	}
	free(key.data);
	return NULL;
}

/*
 * An array or object (ps->p at its opening bracket), its items parsed at
 * depth + 1.  NULL with the error set on failure.
 */
static JsonValue *
parse_container(JsonParser *ps, JsonType type, int depth)
{
	bool		object = type == JSON_OBJECT;
	char		close = object ? '}' : ']';
	JsonValue  *v = new_value(ps, type);
	size_t		cap = 0;

	if (v == NULL)
		return NULL;
	ps->p++;					/* the opening bracket */
	skip_space(ps);
	if (ps->p < ps->end && *ps->p == close)
	{
		ps->p++;
		return v;
	}
	for (;;)
	{
		char	   *key = NULL;
		JsonValue  *item;
		int			next;

		if (object && (key = parse_key(ps, v)) == NULL)
			break;
		if ((item = parse_value(ps, depth + 1)) == NULL)
		{
			free(key);
			break;
		}
		if (!add_item(ps, v, &cap, item, key))
			break;
		next = after_item(ps, close, object ? "expected ',' or '}' in an object" :
						  "expected ',' or ']' in an array");
		if (next < 0)
			break;
		if (next == 0)
			return v;
	}
	json_free(v);
	return NULL;
}

static bool
match_word(JsonParser *ps, const char *word)
{
	size_t		n = strlen(word);

	if ((size_t) (ps->end - ps->p) >= n && memcmp(ps->p, word, n) == 0)
	{
		ps->p += n;
		return true;
	}
	return false;
}

static JsonValue *
parse_value(JsonParser *ps, int depth)
{
	JsonValue  *v;

	if (depth > JSON_MAX_DEPTH)
	{
		parse_error(ps, "nested deeper than %d levels", JSON_MAX_DEPTH);
		return NULL;
	}
	skip_space(ps);
	if (ps->p >= ps->end)
	{
		parse_error(ps, "unexpected end of input");
		return NULL;
	}
	switch (*ps->p)
	{
		case '{':
			return parse_container(ps, JSON_OBJECT, depth);
		case '[':
			return parse_container(ps, JSON_ARRAY, depth);
		case '"':
			return parse_string(ps);
		case 't':
		case 'f':
		case 'n':
			if (match_word(ps, "true"))
			{
				if ((v = new_value(ps, JSON_BOOL)) != NULL)
					v->boolean = true;
				return v;
			}
			if (match_word(ps, "false"))
				return new_value(ps, JSON_BOOL);
			if (match_word(ps, "null"))
				return new_value(ps, JSON_NULL);
			break;
		default:
			if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
				return parse_number(ps);
			break;
	}
	parse_error(ps, "unexpected character '%c'", *ps->p);
	return NULL;
}

JsonValue *
json_parse(const char *text, size_t len, char *errbuf, size_t errlen)
{
	JsonParser	ps = {text, text + len, 1, errbuf, errlen, false};
	JsonValue  *v = parse_value(&ps, 0);

	if (v == NULL)
		return NULL;
	skip_space(&ps);
	if (ps.p < ps.end)
	{
		parse_error(&ps, "unexpected text after the JSON document");
		json_free(v);
		return NULL;
	}
	return v;
}

const JsonValue *
json_get(const JsonValue *obj, const char *key)
{
	if (obj == NULL || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
	{
		if (strcmp(obj->keys[i], key) == 0)
			return obj->items[i];
	}
	return NULL;
}

const char *
json_type_name(JsonType type)
{
	switch (type)
	{
		case JSON_NULL:
			return "null";
		case JSON_BOOL:
			return "a boolean";
		case JSON_NUMBER:
			return "a number";
		case JSON_STRING:
			return "a string";
		case JSON_ARRAY:
			return "an array";
		case JSON_OBJECT:
			return "an object";
	}
	return "?";
}

bool
json_is_integer(const JsonValue *v)
{
	return v->type == JSON_NUMBER && strpbrk(v->str, ".eE") == NULL;
}
