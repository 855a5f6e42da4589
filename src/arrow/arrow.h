/*-------------------------------------------------------------------------
 *
 * arrow.h
 *		Public interface of pg_warp's Apache Arrow IPC library.
 *
 * A small library in plain C99 (no postgres.h) shared by the extension
 * (arrow_fdw, the executor) and the command-line tools (pg2arrow,
 * arrow-inspect).  It reads the Arrow IPC file and stream formats and writes
 * the file format.
 *
 * Ground rules for every function declared here:
 *	- Every offset, length, count and nesting depth read from a file is checked
 *	  against the file size (or the enclosing structure) before use.  Malformed
 *	  input gives ARROW_ERR_INVALID with a message, never a crash.
 *	- Functions that can fail return an ArrowErrorCode (ARROW_OK == 0) and fill
 *	  the caller's ArrowError.  They never print and never exit.
 *	- All memory comes from an ArrowAllocator.  Objects remember the allocator
 *	  they were created with and free through it.  The extension passes one
 *	  that uses palloc in a memory context; the tools use malloc.
 *
 * The JSON form of schemas and values used by arrow-inspect and by the test
 * tools is specified in doc/arrow-json.md.
 *
 * Source files (the list the Makefiles build is sources.mk):
 *	arrow_util.c	allocator, errors, metadata, schema copy/compare/free,
 *					float16 and decimal128 helpers (internal: arrow_internal.h)
 *	arrow_types.c	the table of types: layout, widths, value kinds, default
 *					PostgreSQL types (arrow_types.h); bitmaps: arrow_bits.h
 *	arrow_io.c		the positioned read and write loops (arrow_io.h)
 *	fb_read.c		bounds-checked flatbuffer reading (internal, fb_read.h)
 *	arrow_read.c	file and stream reader: footer, messages, batch metadata
 *					(what the reader's files share: arrow_reader.h)
 *	arrow_read_schema.c	the schema and what is derived from it
 *	arrow_load.c	batch loading and validation
 *	arrow_load_dict.c	dictionaries of a batch, deltas concatenated
 *	arrow_codec.c	LZ4_FRAME and ZSTD body decompression
 *	arrow_views.c	views, list views, run ends: validation and accessors;
 *					Decimal256 text
 *	arrow_json.c	schema and values as JSON
 *	fb_build.c		flatbuffer builder (internal, fb_build.h)
 *	arrow_build.c	column builders
 *	arrow_write.c	file writer, append, concurrent batch writes
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ARROW_H
#define PG_WARP_ARROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Errors and allocation
 * ------------------------------------------------------------------------
 */
typedef enum ArrowErrorCode
{
	ARROW_OK = 0,
	ARROW_ERR_IO,				/* open/read/write/rename failed; sys_errno set */
	ARROW_ERR_INVALID,			/* malformed, truncated or inconsistent input */
	ARROW_ERR_UNSUPPORTED,		/* valid Arrow we do not handle (codec, type) */
	ARROW_ERR_NOMEM,			/* the allocator returned NULL */
	ARROW_ERR_SCHEMA_MISMATCH,	/* append to a file with another schema */
	ARROW_ERR_ARGUMENT,			/* the caller broke a documented contract */
	ARROW_ERR_LIMIT,			/* a buffer above ArrowFile.max_buffer_size */
	ARROW_ERR_NOT_ARROW			/* opening: the input is no Arrow IPC at all */
} ArrowErrorCode;

typedef struct ArrowError
{
	ArrowErrorCode code;
	int			sys_errno;		/* errno of the failed system call, else 0 */
	char		message[512];	/* lower case, no trailing period */
} ArrowError;

/* Sets err (if not NULL) and returns code.  printf-style message. */
extern int	arrow_set_error(ArrowError *err, ArrowErrorCode code,
							const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
extern const char *arrow_error_code_name(ArrowErrorCode code);

typedef struct ArrowAllocator
{
	/* malloc_fn/realloc_fn may return NULL (-> ARROW_ERR_NOMEM). */
	void	   *(*malloc_fn) (void *ctx, size_t size);
	void	   *(*realloc_fn) (void *ctx, void *ptr, size_t size);
	void		(*free_fn) (void *ctx, void *ptr);
	void	   *ctx;
} ArrowAllocator;

/* malloc/realloc/free.  Passing NULL as an allocator means this one. */
extern const ArrowAllocator arrow_default_allocator;

/* ------------------------------------------------------------------------
 * Schema
 * ------------------------------------------------------------------------
 */
typedef enum ArrowTypeId
{
	ARROW_TYPE_NULL = 1,
	ARROW_TYPE_BOOL,
	ARROW_TYPE_INT8,
	ARROW_TYPE_INT16,
	ARROW_TYPE_INT32,
	ARROW_TYPE_INT64,
	ARROW_TYPE_UINT8,
	ARROW_TYPE_UINT16,
	ARROW_TYPE_UINT32,
	ARROW_TYPE_UINT64,
	ARROW_TYPE_FLOAT16,
	ARROW_TYPE_FLOAT32,
	ARROW_TYPE_FLOAT64,
	ARROW_TYPE_DECIMAL128,		/* precision, scale */
	ARROW_TYPE_DATE32,			/* days since 1970-01-01 */
	ARROW_TYPE_DATE64,			/* milliseconds since 1970-01-01 */
	ARROW_TYPE_TIME32,			/* unit: SECOND or MILLI */
	ARROW_TYPE_TIME64,			/* unit: MICRO or NANO */
	ARROW_TYPE_TIMESTAMP,		/* unit, timezone (NULL: none) */
	ARROW_TYPE_INTERVAL_YM,		/* int32 months */
	ARROW_TYPE_INTERVAL_DT,		/* int32 days, int32 milliseconds */
	ARROW_TYPE_INTERVAL_MDN,	/* int32 months, int32 days, int64 nanos */
	ARROW_TYPE_DURATION,		/* unit */
	ARROW_TYPE_UTF8,
	ARROW_TYPE_LARGE_UTF8,
	ARROW_TYPE_BINARY,
	ARROW_TYPE_LARGE_BINARY,
	ARROW_TYPE_FIXED_SIZE_BINARY,	/* byte_width */
	ARROW_TYPE_LIST,			/* one child */
	ARROW_TYPE_LARGE_LIST,		/* one child */
	ARROW_TYPE_FIXED_SIZE_LIST, /* one child, list_size */
	ARROW_TYPE_STRUCT,			/* n children */
	/* read only (the writer refuses them) */
	ARROW_TYPE_UTF8_VIEW,		/* views: 16-byte structs + data buffers */
	ARROW_TYPE_BINARY_VIEW,
	ARROW_TYPE_LIST_VIEW,		/* one child; int32 offsets and sizes */
	ARROW_TYPE_LARGE_LIST_VIEW, /* one child; int64 offsets and sizes */
	ARROW_TYPE_RUN_END_ENCODED, /* children run_ends (int16/32/64), values */
	ARROW_TYPE_DECIMAL256,		/* precision (1..76), scale */
	ARROW_TYPE_MAP				/* one child: struct<key, value>; keys_sorted */
} ArrowTypeId;

/* Same values as TimeUnit in Schema.fbs */
typedef enum ArrowTimeUnit
{
	ARROW_UNIT_SECOND = 0,
	ARROW_UNIT_MILLI = 1,
	ARROW_UNIT_MICRO = 2,
	ARROW_UNIT_NANO = 3
} ArrowTimeUnit;

typedef struct ArrowType
{
	ArrowTypeId id;
	ArrowTimeUnit unit;			/* TIME32, TIME64, TIMESTAMP, DURATION */
	char	   *timezone;		/* TIMESTAMP only; NULL when absent */
	int32_t		precision;		/* DECIMAL128 */
	int32_t		scale;			/* DECIMAL128 */
	int32_t		byte_width;		/* FIXED_SIZE_BINARY */
	int32_t		list_size;		/* FIXED_SIZE_LIST */
	bool		keys_sorted;	/* MAP */
} ArrowType;

typedef struct ArrowKeyValue
{
	char	   *key;
	char	   *value;
} ArrowKeyValue;

typedef struct ArrowMetadata
{
	int32_t		count;
	ArrowKeyValue *items;
	bool		unique;			/* no key appears twice (set by the reader for
								 * a record batch's metadata; false: not known) */
} ArrowMetadata;

typedef struct ArrowDictionaryInfo
{
	int64_t		id;
	ArrowTypeId index_type;		/* ARROW_TYPE_INT8 .. ARROW_TYPE_UINT64 */
	bool		ordered;
} ArrowDictionaryInfo;

typedef struct ArrowField
{
	char	   *name;			/* never NULL; "" when the file has none */
	bool		nullable;
	ArrowType	type;			/* dictionary-encoded: the type of the values */
	bool		has_dictionary;
	ArrowDictionaryInfo dictionary;
	int32_t		n_children;
	struct ArrowField *children;
	ArrowMetadata metadata;
} ArrowField;

typedef struct ArrowSchema
{
	int32_t		n_fields;
	ArrowField *fields;
	ArrowMetadata metadata;
} ArrowSchema;

/* Maximum nesting depth of fields accepted on read and on write. */
#define ARROW_MAX_NESTING	64

/* Deep copy / free / compare.  Copies and frees use the given allocator. */
extern int	arrow_schema_copy(const ArrowAllocator *alloc, ArrowSchema *dst,
							  const ArrowSchema *src, ArrowError *err);
extern void arrow_schema_free(const ArrowAllocator *alloc, ArrowSchema *schema);
/*
 * True when both describe the same columns: names, types, nullability,
 * children and dictionary encoding (metadata is not compared).  On a
 * difference, writes a description such as 'field "x": int32 vs int64' into
 * why (if not NULL).
 */
extern bool arrow_schema_equal(const ArrowSchema *a, const ArrowSchema *b,
							   char *why, size_t whylen);
/*
 * "int32", "timestamp[us, tz=UTC]", "decimal128(10, 2)", "utf8_view",
 * "binary_view", "list_view", "large_list_view", "run_end_encoded",
 * "decimal256(40, 2)", "map" ... (doc/arrow-json.md)
 */
extern void arrow_type_format(const ArrowType *type, char *buf, size_t len);
/* Value of key in md, or NULL */
extern const char *arrow_metadata_get(const ArrowMetadata *md, const char *key);

/*
 * arrow_metadata_get with a hint: *hint is where the key was found last
 * (in another batch's metadata of the same layout; -1: none), tried first
 * where md's keys are unique, and set to where it is found now.  The same
 * value as arrow_metadata_get, for one comparison where the hint holds.
 */
extern const char *arrow_metadata_get_hinted(const ArrowMetadata *md, const char *key,
											 int32_t *hint);
/* Adds (or replaces) key=value; copies both strings. */
extern int	arrow_metadata_set(const ArrowAllocator *alloc, ArrowMetadata *md,
							   const char *key, const char *value,
							   ArrowError *err);

/*
 * Number of IPC buffers a field itself owns (not counting children):
 * NULL, RUN_END_ENCODED 0; STRUCT, FIXED_SIZE_LIST 1 (validity); LIST,
 * LARGE_LIST, MAP 2; UTF8/BINARY and large variants, LIST_VIEW and
 * LARGE_LIST_VIEW 3; every other type 2; a dictionary-encoded field 2
 * (validity, indices).  UTF8_VIEW/BINARY_VIEW: 2 (validity, views) plus the
 * batch's variadic count for the field.
 */
extern int	arrow_field_buffer_count(const ArrowField *field);
/* Byte width of one value of a fixed-width type; 0 for the others, BOOL too */
extern int	arrow_type_value_width(const ArrowType *type);

/* ------------------------------------------------------------------------
 * Small value helpers
 * ------------------------------------------------------------------------
 */
extern float arrow_half_to_float(uint16_t h);
extern uint16_t arrow_float_to_half(float f);	/* round to nearest even */
/* Decimal128 as two's complement little-endian (lo, hi) */
typedef struct ArrowDecimal128
{
	uint64_t	lo;
	int64_t		hi;
} ArrowDecimal128;
/*
 * Text of unscaled value v at 'scale' (-38..38; the value is v * 10^-scale):
 * "-123.45" for -12345 at scale 2, "1200" for 12 at scale -2.  The longest
 * text fits in ARROW_DECIMAL128_MAX_TEXT bytes.
 */
#define ARROW_DECIMAL128_MAX_TEXT	80
extern void arrow_decimal128_format(ArrowDecimal128 v, int32_t scale,
									char *buf, size_t len);
/*
 * Parses "[-]digits[.digits]" into the unscaled value at precision 1..38 and
 * scale -38..38 (Arrow allows a scale above the precision, and negative
 * ones): the value times 10^scale must be an integer of at most 'precision'
 * digits.
 */
extern int	arrow_decimal128_parse(const char *s, int32_t precision,
								   int32_t scale, ArrowDecimal128 *out,
								   ArrowError *err);
/*
 * Text of a Decimal256 (32 bytes, two's complement little-endian, as
 * stored) at 'scale' (-76..76), as arrow_decimal128_format does.
 */
#define ARROW_DECIMAL256_MAX_TEXT	160
extern void arrow_decimal256_format(const uint8_t *v, int32_t scale,
									char *buf, size_t len);

/* ------------------------------------------------------------------------
 * Reading
 * ------------------------------------------------------------------------
 */

/* Random-access byte source (a file descriptor, memory, ...). */
typedef struct ArrowSource
{
	/*
	 * Reads exactly len bytes at offset into dst; returns ARROW_OK, or an
	 * error (ARROW_ERR_INVALID when the range is past the end).
	 */
	int			(*read_at) (void *ctx, int64_t offset, void *dst, size_t len,
							ArrowError *err);
	int64_t		size;			/* total size in bytes */
	void	   *ctx;
	uint64_t	mem_ctx_storage[2]; /* used by arrow_source_from_memory */
} ArrowSource;

/*
 * Source over a memory buffer.  Neither the buffer nor *src is copied: both
 * must outlive the ArrowFile opened on it.
 */
extern void arrow_source_from_memory(ArrowSource *src, const void *data,
									 size_t len);

typedef enum ArrowCodec
{
	ARROW_CODEC_NONE = -1,
	ARROW_CODEC_LZ4_FRAME = 0,	/* values of CompressionType in Message.fbs */
	ARROW_CODEC_ZSTD = 1
} ArrowCodec;

typedef struct ArrowNode
{
	int64_t		length;
	int64_t		null_count;
} ArrowNode;

typedef struct ArrowBufferRef
{
	int64_t		offset;			/* relative to the batch body */
	int64_t		length;			/* as stored (compressed size if compressed) */
} ArrowBufferRef;

/* One RecordBatch or DictionaryBatch message in a file. */
typedef struct ArrowBatchInfo
{
	int64_t		message_offset; /* file offset of the message (prefix incl.) */
	int64_t		body_offset;	/* file offset of the body */
	int64_t		body_length;
	int64_t		n_rows;
	ArrowCodec	codec;
	int32_t		n_nodes;
	ArrowNode  *nodes;			/* depth-first pre-order over the fields */
	int32_t		n_buffers;
	ArrowBufferRef *buffers;
	/*
	 * Data buffers of each UTF8_VIEW/BINARY_VIEW field (pre-order), and
	 * where each top-level column's buffers start; both NULL when the
	 * schema has no view field (then ArrowFile.columns says).
	 */
	int32_t		n_variadic;
	int64_t    *variadic_counts;
	int32_t    *column_first_buffer;	/* schema.n_fields + 1 entries */
	int32_t    *column_first_variadic;	/* schema.n_fields entries */
	ArrowMetadata metadata;		/* the message's custom_metadata */
	/*
	 * Not NULL: the arrays above and the metadata's items and strings lie
	 * in this one allocation, freed as a whole (the reader's form)
	 */
	void	   *packed;
} ArrowBatchInfo;

typedef struct ArrowDictionaryBatchInfo
{
	int64_t		id;
	bool		is_delta;
	ArrowBatchInfo batch;		/* one node tree: the dictionary's values */
} ArrowDictionaryBatchInfo;

/*
 * Where a top-level column's nodes and buffers sit in each batch.  With
 * UTF8_VIEW/BINARY_VIEW fields the buffers of a batch start at its own
 * ArrowBatchInfo.column_first_buffer, and n_buffers is the most that any
 * batch has (room enough for arrow_column_extents).
 */
typedef struct ArrowColumnLayout
{
	int32_t		first_node;
	int32_t		n_nodes;
	int32_t		first_buffer;
	int32_t		n_buffers;
} ArrowColumnLayout;

typedef struct ArrowFile
{
	const ArrowAllocator *alloc;
	ArrowSource source;
	bool		is_stream;		/* read as the stream format */
	int16_t		metadata_version;	/* 4 or 5 (V4, V5) */
	ArrowSchema schema;
	ArrowColumnLayout *columns; /* schema.n_fields entries */
	int32_t		n_batches;
	ArrowBatchInfo *batches;
	int32_t		n_dictionaries;
	ArrowDictionaryBatchInfo *dictionaries;
	int64_t		total_rows;		/* sum of n_rows over batches */

	/*
	 * Set by the caller after opening (0, the default: no limit): the most
	 * bytes one buffer of a batch may take in memory, stored or after
	 * decompression.  arrow_batch_load refuses a bigger one with
	 * ARROW_ERR_LIMIT before allocating it.  This bounds variable-width data
	 * (strings, binary), whose size no node length limits; every other
	 * buffer is also checked against what its node's length can need.
	 */
	int64_t		max_buffer_size;

	/*
	 * Set by the caller after opening (NULL, the default: every buffer is
	 * read into memory of the allocator): the whole file, source.size bytes,
	 * mapped by the caller, who keeps it mapped while batches loaded from
	 * it live.  arrow_batch_load then points the buffers whose bytes loading
	 * does not check (validity bitmaps, fixed-width values, the data of
	 * UTF8/BINARY) of uncompressed batches into it, where they start at a
	 * multiple of 8, instead of reading them.  Offsets, dictionary indices,
	 * views and anything else that loading checks are still read into
	 * memory of their own, so that a change of the file after loading
	 * cannot take an accessor outside a buffer.
	 */
	const uint8_t *map;
	/* private to the reader */
	int			fd;				/* -1 unless opened by arrow_file_open */
	void	   *priv;
} ArrowFile;

/*
 * Opens a file by path: file format when it starts with the magic, else the
 * stream format.  Reads and validates the footer (file format), the schema,
 * and the metadata (not the bodies) of every dictionary and record batch.
 */
extern int	arrow_file_open(const char *path, const ArrowAllocator *alloc,
							ArrowFile **out, ArrowError *err);
/* The same over any source; the source must outlive the ArrowFile. */
extern int	arrow_file_open_source(const ArrowSource *src,
								   const ArrowAllocator *alloc,
								   ArrowFile **out, ArrowError *err);

/*
 * The metadata of file's record batches as one flat image (*out, *len bytes,
 * from alloc), which arrow_file_open_image takes instead of reading the
 * batches' messages again; ARROW_ERR_UNSUPPORTED for a stream or a file
 * with view fields.
 */
extern int	arrow_file_batches_image(const ArrowFile *file, const ArrowAllocator *alloc,
									 void **out, uint64_t *len, ArrowError *err);

/*
 * arrow_file_open_source, with the record batches taken from image (an
 * arrow_file_batches_image of the same file, image_len bytes) where it
 * matches the footer's blocks and the schema and passes the checks a batch's
 * message would (*used true); else they are read (*used false).  The image
 * stays the caller's.
 */
extern int	arrow_file_open_image(const ArrowSource *src, const ArrowAllocator *alloc,
								  const void *image, uint64_t image_len, ArrowFile **out,
								  bool *used, ArrowError *err);

/*
 * A file's record batches laid out flat in memory that other processes map
 * at the same address (a PostgreSQL cluster's shared memory): the
 * ArrowBatchInfo array, then a zeroed int32 a batch, then each batch's
 * nodes, buffers, metadata items and strings, every pointer into the same
 * memory.  arrow_batches_flat_len: the bytes a file's take (0 where it
 * cannot be laid out so: a stream, dictionaries, view fields, no batch);
 * arrow_batches_flat_copy writes them into dst (8-aligned, len bytes:
 * arrow_batches_flat_len's) and returns the batches (dst), NULL where len
 * is not the file's.
 */
typedef struct ArrowFlatBatches
{
	const ArrowBatchInfo *batches;
	int32_t		n_batches;
	int32_t		metadata_version;	/* the file's after its batches were read */
} ArrowFlatBatches;

extern uint64_t arrow_batches_flat_len(const ArrowFile *file);
extern const ArrowBatchInfo *arrow_batches_flat_copy(const ArrowFile *file, void *dst,
													 uint64_t len);

/*
 * arrow_file_open_source, with the record batches taken as they lie from
 * given (another open's arrow_batches_flat_copy of the same file) where
 * they match the footer's blocks and the schema (*used true): the file
 * never writes or frees them, so they must outlive it.  Else the batches
 * are read (*used false).
 */
extern int	arrow_file_open_flat(const ArrowSource *src, const ArrowAllocator *alloc,
								 const ArrowFlatBatches *given, ArrowFile **out, bool *used,
								 ArrowError *err);

/*
 * The image of a file's record batches kept in a file of its own for other
 * processes (arrow_image_file.c): ARROW_IMAGE_DIR in the data directory,
 * named after the Arrow file's device and inode (arrow_image_file_path),
 * holding the Arrow file's identity and a CRC-32C of the image.
 */
#define ARROW_IMAGE_DIR		"pg_warp/arrow_meta"

typedef struct ArrowFileIdentity
{
	int64_t		dev;
	int64_t		ino;
	int64_t		size;
	int64_t		mtime_ns;
	int64_t		ctime_ns;
} ArrowFileIdentity;

/* CRC-32C (Castagnoli) of data, as PostgreSQL's pg_crc32c computes it */
extern uint32_t arrow_crc32c(const void *data, size_t len);

/*
 * The image kept at path for the Arrow file of identity id: *len bytes
 * inside a read-only mapping (*map, *map_len: arrow_image_file_unmap), or
 * NULL where there is no regular file there, or it is of another identity,
 * or not whole (its length, its CRC).
 */
extern const void *arrow_image_file_map(const char *path, const ArrowFileIdentity *id,
										uint64_t *len, void **map, size_t *map_len);
extern void arrow_image_file_unmap(void *map, size_t map_len);

/* the path (relative to the data directory) of the image of identity id */
extern void arrow_image_file_path(char *path, size_t size, const ArrowFileIdentity *id);

/*
 * Writes image (len bytes) of the Arrow file of identity id, whose path is
 * source (NULL: none kept), to tmp, then renames it to path; 0, or the
 * errno of what failed (tmp removed)
 */
extern int	arrow_image_file_write(const char *path, const char *tmp,
								   const ArrowFileIdentity *id, const char *source,
								   const void *image, uint64_t len);

/*
 * Removes from directory dir the images of Arrow files that are gone (their
 * source path names no file, or one of another device or inode) and the
 * writers' temporary files older than tmp_age_s seconds; the number
 * removed, or -1 where dir cannot be read.  An image without a source path
 * (written before they had one), or that cannot be read, stays.  An image
 * removed while a process maps it is no harm, and neither is one removed
 * as it is being replaced: the next open of its file writes it again.
 */
extern int	arrow_image_file_prune(const char *dir, int64_t tmp_age_s);

/* an image file of a directory, as arrow_image_file_recent finds it */
#define ARROW_IMAGE_SOURCE_MAX	4096	/* the longest source path an image keeps */
typedef struct ArrowImageEntry
{
	ArrowFileIdentity id;		/* of the Arrow file the image was made from */
	int64_t		image_mtime_ns; /* the image file's modification time */
	char		source[ARROW_IMAGE_SOURCE_MAX + 1]; /* that file's path */
} ArrowImageEntry;

/*
 * The max images of directory dir modified last, into out, newest first:
 * how many, or -1 where dir cannot be read.  Only regular files with an
 * image's head that names a source count; nothing is checked against the
 * Arrow files (the callers stat the sources, and arrow_image_file_map
 * checks the image itself).
 */
extern int	arrow_image_file_recent(const char *dir, ArrowImageEntry *out, int max);
extern void arrow_file_close(ArrowFile *file);

/*
 * A copy of an open file's metadata (schema, layout, every batch's and
 * dictionary's metadata) in memory of alloc, reading through src (which
 * must outlive the copy and describe the same bytes: e.g. the same file
 * opened again, its identity checked by the caller), without reading
 * anything: what opening it again would give, for the cost of copying
 * arrays.  The copy owns no descriptor and has no mapping (map NULL,
 * max_buffer_size 0: the caller sets them as after an open); close it with
 * arrow_file_close.  share_batches: the copy's record batches point into
 * the original's arrays (the array of batches itself, their node and
 * buffer lists, metadata) instead of copies of them, which costs nothing
 * per batch; the original must then outlive the copy, and nobody changes
 * it meanwhile.
 */
extern int	arrow_file_copy(const ArrowFile *file, const ArrowSource *src,
							const ArrowAllocator *alloc, bool share_batches,
							ArrowFile **out, ArrowError *err);

/*
 * Byte extents (absolute file offsets and stored lengths) of the buffers of
 * top-level column 'column' in record batch 'batch', children included, in
 * IPC order.  Returns the number of extents written (at most max_extents) or
 * -1 with err set.  Dictionary-encoded columns also need their dictionary
 * batches; see ArrowFile.dictionaries.
 */
typedef struct ArrowExtent
{
	int64_t		offset;
	int64_t		length;
} ArrowExtent;
extern int	arrow_column_extents(const ArrowFile *file, int32_t batch,
								 int32_t column, ArrowExtent *extents,
								 int max_extents, ArrowError *err);

/*
 * A decoded, validated column of one batch.  Buffers are decompressed and
 * point into memory owned by the ArrowBatch.  offset is always 0.
 */
typedef struct ArrowArray
{
	const ArrowField *field;
	int64_t		length;
	int64_t		null_count;
	const uint8_t *validity;	/* NULL: no value is null */
	const uint8_t *values;		/* fixed-width values, bits (BOOL), indices */
	const void *offsets;		/* int32_t[] or int64_t[] (LARGE_*), length+1 */
	const uint8_t *data;		/* UTF8/BINARY bytes */
	int64_t		data_length;
	const void *sizes;			/* LIST_VIEW int32_t[], LARGE_LIST_VIEW int64_t[] */
	/* UTF8_VIEW/BINARY_VIEW: values holds the 16-byte views */
	int32_t		n_variadic;
	const uint8_t *const *variadic;	/* the data buffers */
	const int64_t *variadic_lengths;
	int32_t		n_children;
	struct ArrowArray *children;
	const struct ArrowArray *dictionary;	/* dictionary-encoded: values */
} ArrowArray;

typedef struct ArrowBatch
{
	const ArrowFile *file;
	int32_t		index;			/* record batch number */
	int64_t		n_rows;
	int32_t		n_columns;		/* == file->schema.n_fields */
	ArrowArray *columns;		/* length n_columns; unloaded: field == NULL */
	void	   *priv;
} ArrowBatch;

/*
 * Reads the buffers of the columns with want[i] true (all when want is NULL)
 * of record batch 'batch', decompresses them, loads dictionaries they need,
 * and validates everything a value accessor relies on: buffer sizes for the
 * node lengths, monotonic offsets within the data, child lengths, dictionary
 * indices within the dictionary.
 * Before a compressed buffer is decompressed into a new allocation, its
 * declared uncompressed length is checked against what its node can hold (validity ceil(length/8) bytes,
 * fixed-width values length x width, offsets (length + 1) x width, each
 * rounded up to the 64-byte padding writers add): more is ARROW_ERR_INVALID.
 * The buffers of an empty node are not read at all, whatever they declare.
 * Any buffer above file->max_buffer_size is ARROW_ERR_LIMIT.
 */
extern int	arrow_batch_load(ArrowFile *file, int32_t batch, const bool *want,
							 ArrowBatch **out, ArrowError *err);
extern void arrow_batch_free(ArrowBatch *batch);

/*
 * Index into a->children[1] (the values) of logical row 'row' of a
 * validated RUN_END_ENCODED array (binary search over the run ends).
 */
extern int64_t arrow_ree_index(const ArrowArray *a, int64_t row);

/* Whether row 'row' is null (RUN_END_ENCODED: its value is) */
static inline bool
arrow_array_is_null(const ArrowArray *a, int64_t row)
{
	if (a->field != NULL && a->field->type.id == ARROW_TYPE_NULL)
		return true;
	if (a->field != NULL && a->field->type.id == ARROW_TYPE_RUN_END_ENCODED)
		return arrow_array_is_null(&a->children[1], arrow_ree_index(a, row));
	return a->validity != NULL && !(a->validity[row >> 3] & (1u << (row & 7)));
}

/*
 * Bytes of row 'row' of a validated UTF8_VIEW/BINARY_VIEW array (not null):
 * inline in the view (at most 12 bytes) or in a data buffer.
 */
static inline const uint8_t *
arrow_view_value(const ArrowArray *a, int64_t row, int32_t *len)
{
	const uint8_t *v = a->values + row * 16;
	int32_t		n;
	int32_t		buf;
	int32_t		off;

	__builtin_memcpy(&n, v, 4);
	*len = n;
	if (n <= 12)
		return v + 4;
	__builtin_memcpy(&buf, v + 8, 4);
	__builtin_memcpy(&off, v + 12, 4);
	return a->variadic[buf] + off;
}

/*
 * Range [*start, *end) of the child's values that row 'row' (not null) of a
 * validated LIST, LARGE_LIST, MAP, FIXED_SIZE_LIST, LIST_VIEW or
 * LARGE_LIST_VIEW array covers.
 */
extern void arrow_list_range(const ArrowArray *a, int64_t row, int64_t *start,
							 int64_t *end);

/*
 * Appends the JSON form (doc/arrow-json.md) of row 'row' of array a to buf.
 * arrow_schema_to_json writes the schema's JSON form.
 */
typedef struct ArrowStrBuf
{
	const ArrowAllocator *alloc;
	char	   *data;
	size_t		len;
	size_t		cap;
} ArrowStrBuf;
extern int	arrow_strbuf_append(ArrowStrBuf *buf, const char *s, size_t len,
								ArrowError *err);
extern void arrow_strbuf_free(ArrowStrBuf *buf);
extern int	arrow_value_to_json(const ArrowArray *a, int64_t row,
								ArrowStrBuf *buf, ArrowError *err);
extern int	arrow_schema_to_json(const ArrowSchema *schema, ArrowStrBuf *buf,
								 ArrowError *err);

/* ------------------------------------------------------------------------
 * Building columns
 * ------------------------------------------------------------------------
 */
typedef struct ArrowBuilder ArrowBuilder;

/*
 * A builder for values of 'field' (children built recursively).  The field
 * must outlive the builder.  Dictionary-encoded fields build indices; their
 * values are built by a separate builder for the dictionary.
 */
extern int	arrow_builder_create(const ArrowField *field,
								 const ArrowAllocator *alloc,
								 ArrowBuilder **out, ArrowError *err);
extern void arrow_builder_free(ArrowBuilder *b);
extern ArrowBuilder *arrow_builder_child(ArrowBuilder *b, int32_t i);
extern int64_t arrow_builder_length(const ArrowBuilder *b);
/* Bytes the built buffers would take in a batch body (for batch sizing) */
extern int64_t arrow_builder_body_size(const ArrowBuilder *b);
/*
 * Append functions; each appends one value (one row) to b.
 *	null: any type (for STRUCT also appends a null to every child, for
 *		FIXED_SIZE_LIST list_size nulls to the child)
 *	bool: BOOL
 *	int: INT*, UINT* (range checked), DATE32/64, TIME32/64, TIMESTAMP,
 *		DURATION, INTERVAL_YM, dictionary indices
 *	float: FLOAT16 (rounded), FLOAT32, FLOAT64
 *	decimal: DECIMAL128
 *	bytes: UTF8, LARGE_UTF8, BINARY, LARGE_BINARY, FIXED_SIZE_BINARY (len
 *		must equal byte_width)
 *	interval_dt / interval_mdn
 *	valid: STRUCT (then append one value to each child), LIST/LARGE_LIST
 *		(call list_end after appending the elements to the child),
 *		FIXED_SIZE_LIST (then append list_size values to the child)
 * A value out of range of the type gives ARROW_ERR_ARGUMENT.
 * (writer) Also ARROW_ERR_ARGUMENT: a null for a non-nullable field (NULL
 * type excepted), TIME32/TIME64 outside [0, 24h) in the type's unit,
 * negative dictionary indices, invalid UTF-8 for UTF8, a finite value that
 * rounds to infinity in FLOAT16/FLOAT32, more than 2 GiB of data or 2^31-1
 * list elements per batch with int32 offsets.  The value is then not
 * appended (after ARROW_ERR_NOMEM on a nested builder, reset it).
 */
extern int	arrow_append_null(ArrowBuilder *b, ArrowError *err);
extern int	arrow_append_bool(ArrowBuilder *b, bool v, ArrowError *err);
extern int	arrow_append_int(ArrowBuilder *b, int64_t v, ArrowError *err);
extern int	arrow_append_uint(ArrowBuilder *b, uint64_t v, ArrowError *err);
extern int	arrow_append_float(ArrowBuilder *b, double v, ArrowError *err);
extern int	arrow_append_decimal(ArrowBuilder *b, ArrowDecimal128 v,
								 ArrowError *err);
extern int	arrow_append_bytes(ArrowBuilder *b, const void *v, size_t len,
							   ArrowError *err);
extern int	arrow_append_interval_dt(ArrowBuilder *b, int32_t days,
									 int32_t msecs, ArrowError *err);
extern int	arrow_append_interval_mdn(ArrowBuilder *b, int32_t months,
									  int32_t days, int64_t nanos,
									  ArrowError *err);
extern int	arrow_append_valid(ArrowBuilder *b, ArrowError *err);
extern int	arrow_list_end(ArrowBuilder *b, ArrowError *err);
/* Forget the values (keep capacity), after a batch was written */
extern void arrow_builder_reset(ArrowBuilder *b);

/*
 * Appends rows [offset, offset + count) of src, a builder for the same field
 * or a field of the same type, to dst (children included): to merge the
 * rows of several builders into one batch.  ARROW_ERR_ARGUMENT, with dst
 * unchanged: rows outside src, another type, a list left open in either, a
 * null for a non-nullable field, int32 offsets past 2^31 - 1.  After
 * ARROW_ERR_NOMEM, dst may hold part of the rows: reset it.
 */
extern int	arrow_builder_append_rows(ArrowBuilder *dst, const ArrowBuilder *src,
									  int64_t offset, int64_t count,
									  ArrowError *err);
/*
 * Bytes that rows [offset, offset + count) of b take in its buffers,
 * children included, before each buffer's padding to 64 bytes (so that the
 * rows that fit a batch size can be chosen before copying them).
 */
extern int64_t arrow_builder_rows_size(const ArrowBuilder *b, int64_t offset,
									   int64_t count);

/*
 * Smallest and largest non-null value of a builder: integer-valued types
 * (INT*, UINT8/16/32, DATE*, TIME*, TIMESTAMP, DURATION) as int64, floats
 * as double with NaN left out, DECIMAL128 unscaled.  kind is NONE when no
 * value counts, for dictionary-encoded fields and for other types.
 */
typedef enum ArrowMinMaxKind
{
	ARROW_MINMAX_NONE,
	ARROW_MINMAX_INT,
	ARROW_MINMAX_FLOAT,
	ARROW_MINMAX_DECIMAL
} ArrowMinMaxKind;

typedef struct ArrowMinMax
{
	ArrowMinMaxKind kind;
	int64_t		imin,
				imax;
	double		dmin,
				dmax;
	ArrowDecimal128 xmin,
				xmax;
} ArrowMinMax;
extern void arrow_builder_minmax(const ArrowBuilder *b, ArrowMinMax *out);

/* ------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------
 */
typedef struct ArrowWriter ArrowWriter;

/*
 * Creates (truncates) path and writes the magic and the schema.  Buffers in
 * record batches are 64-byte aligned.  No compression is written.
 */
extern int	arrow_writer_create(const char *path, const ArrowSchema *schema,
								const ArrowAllocator *alloc,
								ArrowWriter **out, ArrowError *err);
/*
 * Opens an existing Arrow file to add record batches.  The file's schema
 * must equal 'schema' (ARROW_ERR_SCHEMA_MISMATCH, with the difference, if
 * not); schema == NULL accepts the file's own (see arrow_writer_schema).
 * Existing batches are not rewritten.  Until arrow_writer_close succeeds, a
 * failure or arrow_writer_abort puts the file back as it was; a crash is
 * undone by arrow_writer_recover (the journal is described below).
 */
extern int	arrow_writer_open_append(const char *path, const ArrowSchema *schema,
									 const ArrowAllocator *alloc,
									 ArrowWriter **out, ArrowError *err);
extern const ArrowSchema *arrow_writer_schema(const ArrowWriter *w);

/*
 * Writes a dictionary batch for dictionary id 'id' from a builder of the
 * dictionary's values (is_delta: adds to the earlier ones).  Must precede
 * the record batches that use it.
 * (writer) 'values' is a builder created for a copy of the dictionary-encoded
 * field with has_dictionary = false; it is reset once written.  The file
 * format allows one non-delta batch per id, then deltas only.
 */
extern int	arrow_writer_write_dictionary(ArrowWriter *w, int64_t id,
										  ArrowBuilder *values, bool is_delta,
										  ArrowError *err);

/*
 * Writes one record batch from one builder per top-level field (all with
 * n_rows values) and resets the builders.  metadata (may be NULL) becomes the
 * message's custom_metadata.
 * (writer) The builders are reset only when the batch was written; a record
 * batch before a dictionary it uses is ARROW_ERR_ARGUMENT.  The body is
 * written straight from the builders' buffers (no copy in memory).
 * Thread-safe: several threads may write batches, each from its own
 * builders, at once; each reserves its file range atomically.  Every call
 * must have returned before arrow_writer_close.  After a failed write the
 * writer is dead: the file is already removed (create) or restored
 * (append), and every later call returns the first error.
 */
extern int	arrow_writer_write_batch(ArrowWriter *w, ArrowBuilder **columns,
									 const ArrowMetadata *metadata,
									 ArrowError *err);

/*
 * Asks the kernel to start writing what was written so far to disk, without
 * waiting for it (Linux; elsewhere it does nothing): called now and then
 * while batches are written, it spreads the disk writes over the export
 * instead of leaving them all to the fsync of arrow_writer_close.  It can
 * block while the device is busy, so call it from a thread that does not
 * build batches.  Thread-safe.
 */
extern void arrow_writer_start_writeback(ArrowWriter *w);

/*
 * Writes the footer and closes.  The writer is freed in every case.
 * (writer) Success means the file was fsynced; on failure the file is
 * removed or restored as by arrow_writer_abort.
 */
extern int	arrow_writer_close(ArrowWriter *w, ArrowError *err);
/*
 * Gives up and frees the writer: a file made by arrow_writer_create is
 * removed; a file opened by arrow_writer_open_append is restored to its
 * original bytes and size.
 */
extern void arrow_writer_abort(ArrowWriter *w);

/*
 * Crash safety of appends.  arrow_writer_open_append writes a journal
 * PATH ARROW_APPEND_JOURNAL_SUFFIX (next to the file) holding the file's
 * old size and the old tail bytes that the append overwrites, with a
 * checksum, and makes it durable (fsync of the journal and the directory)
 * before the file is touched; arrow_writer_close removes it (durably) once
 * the new footer is on disk.  A journal left by a process that died
 * mid-append lets arrow_writer_recover put the old file back.
 */
#define ARROW_APPEND_JOURNAL_SUFFIX ".pg2arrow-journal"

typedef enum ArrowRecoverResult
{
	ARROW_RECOVER_NONE,			/* no journal: nothing to do */
	ARROW_RECOVER_RESTORED,		/* the file was put back as before the append */
	ARROW_RECOVER_DISCARDED		/* the journal was incomplete, or for another
								 * file (or the file is gone): only the journal
								 * was removed; the file was not touched */
} ArrowRecoverResult;

/*
 * Undoes an interrupted append to path, if its journal exists: takes the
 * file's exclusive lock (ARROW_ERR_IO if a live appender holds it), writes
 * the saved tail back, truncates to the old size, fsyncs, then removes the
 * journal and fsyncs the directory.  *result says what was done.  A file
 * now shorter than the untouched part of the old file cannot be restored
 * (ARROW_ERR_INVALID; the journal is kept).
 */
extern int	arrow_writer_recover(const char *path, ArrowRecoverResult *result,
								 ArrowError *err);

/* fsyncs the directory that holds path (after a rename or unlink in it) */
extern int	arrow_writer_sync_dir(const char *path, ArrowError *err);

#ifdef __cplusplus
}
#endif

#endif							/* PG_WARP_ARROW_H */
