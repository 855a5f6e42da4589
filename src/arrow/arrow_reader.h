/*-------------------------------------------------------------------------
 *
 * arrow_reader.h
 *		What the reader's source files share: the flatbuffer field ids and
 *		constants of the IPC format, the reader's private state, one message
 *		read from a file, the batch loader's state, and the functions one
 *		file calls in another.  Internal to the reader (not in arrow.h).
 *
 * The reader's files:
 *	arrow_read.c		opening: bytes, messages, file and stream formats,
 *						column extents
 *	arrow_read_schema.c	the Schema flatbuffer to ArrowSchema, and what is
 *						derived from it (column layouts, dictionary fields)
 *	arrow_load.c		arrow_batch_load: buffers, decompression, validation
 *	arrow_load_dict.c	dictionaries of a batch: decoding, deltas
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ARROW_READER_H
#define PG_WARP_ARROW_READER_H

#include "arrow_internal.h"
#include "arrow_codec.h"
#include "fb_read.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Arrow reader assumes a little-endian host"
#endif

/* Field ids of the tables we read (File.fbs, Message.fbs, Schema.fbs) */
#define FOOTER_VERSION			0
#define FOOTER_SCHEMA			1
#define FOOTER_DICTIONARIES		2
#define FOOTER_RECORD_BATCHES	3
#define SCHEMA_ENDIANNESS		0
#define SCHEMA_FIELDS			1
#define SCHEMA_METADATA			2
#define FIELD_NAME				0
#define FIELD_NULLABLE			1
#define FIELD_TYPE				2	/* union: type 2, value 3 */
#define FIELD_DICTIONARY		4
#define FIELD_CHILDREN			5
#define FIELD_METADATA			6
#define KEYVALUE_KEY			0
#define KEYVALUE_VALUE			1
#define DICTENC_ID				0
#define DICTENC_INDEX_TYPE		1
#define DICTENC_ORDERED			2
#define MESSAGE_VERSION			0
#define MESSAGE_HEADER			1	/* union: type 1, value 2 */
#define MESSAGE_BODY_LENGTH		3
#define MESSAGE_METADATA		4
#define RECORDBATCH_LENGTH		0
#define RECORDBATCH_NODES		1
#define RECORDBATCH_BUFFERS		2
#define RECORDBATCH_COMPRESSION	3
#define RECORDBATCH_VARIADIC	4	/* variadicBufferCounts: [long] */
#define DICTBATCH_ID			0
#define DICTBATCH_DATA			1
#define DICTBATCH_IS_DELTA		2
#define COMPRESSION_CODEC		0
#define COMPRESSION_METHOD		1

/* Message.fbs MessageHeader union */
#define HEADER_SCHEMA			1
#define HEADER_DICTIONARY_BATCH	2
#define HEADER_RECORD_BATCH		3

/* Schema.fbs MetadataVersion */
#define METADATA_V4				3
#define METADATA_V5				4

#define MAGIC					"ARROW1"
#define MAGIC_LEN				6
#define FILE_HEADER_LEN			8	/* magic padded to 8 bytes */
#define FILE_TRAILER_LEN		10	/* int32 footer length + magic */
#define CONTINUATION			0xFFFFFFFFu
#define BLOCK_SIZE				24	/* File.fbs struct Block */
#define NODE_SIZE				16	/* Message.fbs struct FieldNode */
#define BUFFER_SIZE				16	/* Schema.fbs struct Buffer */

/* The value field of a dictionary id (a shallow copy, never freed deeply) */
typedef struct DictValueField
{
	int64_t		id;
	ArrowField	field;			/* the encoded field, has_dictionary false */
	bool		seen;			/* a dictionary batch for id was read */
} DictValueField;

/* ArrowFile.priv */
typedef struct ReaderPriv
{
	int32_t    *visible_dicts;	/* per record batch: dictionaries[0..n) apply */
	int32_t		n_dict_fields;
	DictValueField *dict_fields;
	int32_t		batches_cap;	/* allocated entries of batches, dicts */
	int32_t		dicts_cap;
	int32_t		n_borrowed;		/* batches[0..n) point into another file's
								 * arrays (arrow_file_copy's share_batches):
								 * not freed by arrow_file_close */
	bool		batches_borrowed;	/* batches and visible_dicts themselves are
									 * another file's (share_batches): never
									 * freed or grown in place here */
	/* while the file is opened: one message buffer and one scratch area
	 * for every record batch's metadata (read_message, parse_batch_packed) */
	uint8_t    *msg_buf;
	size_t		msg_cap;
	uint8_t    *scratch;
	size_t		scratch_cap;
	/* while the file is opened: the caller's image of its batches
	 * (arrow_read_image.c); once taken, the memory their arrays are in */
	const uint8_t *image;
	uint64_t	image_len;
	uint8_t    *image_block;
	/* while the file is opened: the batches given laid out flat, or NULL */
	const ArrowFlatBatches *given;
} ReaderPriv;

/* One message read from the file */
typedef struct Message
{
	int64_t		offset;			/* of the prefix */
	int64_t		metadata_length;	/* prefix + flatbuffer + padding */
	int64_t		body_offset;
	int64_t		body_length;
	int16_t		version;		/* MetadataVersion */
	uint8_t		header_type;
	uint8_t    *data;			/* the flatbuffer */
	bool		borrowed;		/* data is ReaderPriv.msg_buf: not freed */
	FbReader	fb;
	FbTable		msg;
	FbTable		header;
} Message;

/* All memory of one ArrowBatch: a list of allocations freed together */
typedef struct Arena
{
	const ArrowAllocator *alloc;
	void	  **ptrs;
	int32_t		n;
	int32_t		cap;
} Arena;

/* A decoded dictionary of one batch */
typedef struct LoadedDict
{
	int64_t		id;
	const ArrowArray *values;
	struct LoadedDict *next;
} LoadedDict;

/* ArrowBatch.priv */
typedef struct BatchPriv
{
	Arena		arena;
	LoadedDict *dicts;
} BatchPriv;

/* State while loading the arrays of one batch message */
typedef struct Loader
{
	const ArrowFile *file;
	const ArrowBatchInfo *info;
	int32_t		node;			/* next node of info */
	int32_t		buffer;			/* next buffer of info */
	int32_t		variadic;		/* next variadic count of info */
	BatchPriv  *bp;
	ArrowCodecCtx *codec;
	int32_t		visible;		/* file->dictionaries[0..visible) apply */
	int64_t		concat_limit;	/* most values concat_slices may make */
	char		what[64];		/* "record batch 3" */
	ArrowError *err;
} Loader;

/* in arrow_read.c */

/* Reads len bytes at offset, which must lie inside the source */
extern int	arrow_read_bytes(const ArrowFile *file, int64_t offset, void *dst,
							 size_t len, ArrowError *err);

/* in arrow_read_schema.c */

/* Custom metadata: a vector of KeyValue tables in field 'field' of t */
extern int	arrow_parse_metadata(const ArrowAllocator *alloc, const FbTable *t,
								 int field, ArrowMetadata *md, ArrowError *err);
/* Schema table to file->schema */
extern int	arrow_parse_schema(ArrowFile *file, const FbTable *st,
							   ArrowError *err);
/* Schema-derived state: column layouts and dictionary value fields */
extern int	arrow_prepare_schema(ArrowFile *file, ArrowError *err);
/* The value field of dictionary id, or NULL when no field uses it */
extern const DictValueField *arrow_find_dict_field(const ArrowFile *file,
												   int64_t id);
/* Adds the nodes and buffers of f and its children to the counts */
extern void arrow_count_layout(const ArrowField *f, int32_t *nodes,
							   int32_t *buffers);
/* The variadicBufferCounts of a record batch (see arrow_read_schema.c) */
extern bool arrow_range_inside(int64_t offset, int64_t len, int64_t limit);
extern bool arrow_metadata_keys_unique(const ArrowMetadata *md);
extern int	arrow_reserve_batches(ArrowFile *file, int32_t n, ArrowError *err);
extern int	arrow_add_batch(ArrowFile *file, ArrowBatchInfo *info, ArrowError *err);
extern bool arrow_schema_has_views(const ArrowSchema *schema);
extern bool arrow_batches_from_image(ArrowFile *file, const FbVector *blocks);
extern bool arrow_batches_given(ArrowFile *file, const FbVector *blocks);
extern int	arrow_parse_variadic(const ArrowAllocator *alloc, const FbVector *v,
								 const ArrowField *fields, int32_t n_fields,
								 ArrowBatchInfo *info, int32_t *want_buffers,
								 const char *what, ArrowError *err);

/* in arrow_load.c */

/* Zeroed memory owned by the arena */
extern void *arrow_arena_calloc(Arena *arena, size_t n, size_t size,
								ArrowError *err);
/* Frees every allocation of the arena */
extern void arrow_arena_free(Arena *arena);
/* Sets an ARROW_ERR_INVALID naming the batch and the field */
extern int	arrow_load_error(Loader *L, const ArrowField *f, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
/* Loads the next node and buffers of L into a, for field f (validated) */
extern int	arrow_load_array(Loader *L, const ArrowField *f, ArrowArray *a);

/* in arrow_load_dict.c */

/* The decoded dictionary of dictionary-encoded field f for L's batch */
extern int	arrow_get_dictionary(Loader *L, const ArrowField *f,
								 const ArrowArray **out);

#endif							/* PG_WARP_ARROW_READER_H */
