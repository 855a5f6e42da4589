/*-------------------------------------------------------------------------
 *
 * json.h
 *		A small JSON parser (RFC 8259) for arrow-gen: the whole document
 *		becomes a tree of JsonValue.
 *
 * Numbers keep their literal text, so that arrow-gen can convert them
 * exactly for the column's type (int64 and uint64 beyond 2^53, doubles
 * correctly rounded by strtod).  Strings are decoded to UTF-8 and may
 * contain NUL bytes (from \u0000); 'len' is their length.  Duplicate keys in
 * an object are an error.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARROW_GEN_JSON_H
#define ARROW_GEN_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum JsonType
{
	JSON_NULL,
	JSON_BOOL,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT
} JsonType;

typedef struct JsonValue
{
	JsonType	type;
	int			line;			/* line where the value starts (from 1) */
	bool		boolean;		/* JSON_BOOL */
	char	   *str;			/* JSON_STRING: decoded; JSON_NUMBER: the
								 * literal; NUL-terminated */
	size_t		len;			/* length of str */
	size_t		n;				/* JSON_ARRAY, JSON_OBJECT: number of items */
	struct JsonValue **items;	/* the values */
	char	  **keys;			/* JSON_OBJECT: the keys, NUL-terminated */
} JsonValue;

/*
 * Parses text[0..len) as one JSON document.  Returns NULL and a message
 * with the line number in errbuf on a syntax error or out of memory.
 */
extern JsonValue *json_parse(const char *text, size_t len, char *errbuf,
							 size_t errlen);
extern void json_free(JsonValue *v);

/* The value of key in object obj, or NULL (also when obj is no object) */
extern const JsonValue *json_get(const JsonValue *obj, const char *key);

/* "null", "boolean", "number", ... for messages */
extern const char *json_type_name(JsonType type);

/* True when a JSON_NUMBER has no fraction and no exponent */
extern bool json_is_integer(const JsonValue *v);

#endif							/* ARROW_GEN_JSON_H */
