/*
 * reader_image.c, part of test_reader.c: the image of a file's record
 * batches (arrow_file_batches_image, arrow_file_open_image,
 * src/arrow/arrow_read_image.c) on every file seed:
 *	- the image taken gives the batches reading the messages gives, field
 *	  by field, and the same rows;
 *	- another file's image, every truncation of an image, and single-byte
 *	  changes throughout one are refused or taken without a crash (ASan),
 *	  the file opening either way; a refused image gives the file's rows;
 *	- a stream, or a file with view fields, has no image;
 *	- the image's file: written and mapped back, refused for another
 *	  identity, a changed byte, a cut file, a FIFO;
 *	- pruning a directory of image files: those of sources that are gone
 *	  or now name another file go, and old temporary files; the others,
 *	  images without a source and what is not a regular file stay;
 *	- copies of an opened file (arrow_file_copy), sharing its batches or
 *	  not, and copies of such copies: the same batches and rows, and each
 *	  closed before or after the others without touching their memory (ASan);
 *	- the batches laid out flat (arrow_batches_flat_copy, arrow_file_open_flat):
 *	  taken as they lie, the messages' batches and rows; another file's or a
 *	  short layout not taken; the files never free what they borrowed (ASan);
 *	- a file of thousands of batches with statistics-like keys, whose image
 *	  takes more than a huge page (the room placed on a huge-page boundary):
 *	  the batches and rows reading the messages gives.
 */

#include "arrow_reader.h"

/* all rows of an opened file as JSON lines (malloc'd), NULL on error */
static char *
opened_rows(ArrowFile *file, ArrowError *err)
{
	ArrowStrBuf buf = {NULL, NULL, 0, 0};

	if (arrow_strbuf_append(&buf, "", 0, err) != ARROW_OK)
		return NULL;
	for (int32_t b = 0; b < file->n_batches; b++)
	{
		ArrowBatch *batch;
		int			rc;

		if (arrow_batch_load(file, b, NULL, &batch, err) != ARROW_OK)
		{
			arrow_strbuf_free(&buf);
			return NULL;
		}
		rc = rows_json(file, batch, &buf, err);
		arrow_batch_free(batch);
		if (rc != ARROW_OK)
		{
			arrow_strbuf_free(&buf);
			return NULL;
		}
	}
	return buf.data;
}

/* are a's and b's record batches the same, field by field */
static bool
same_batches(const ArrowFile *a, const ArrowFile *b)
{
	if (a->n_batches != b->n_batches || a->total_rows != b->total_rows ||
		a->metadata_version != b->metadata_version)
		return false;
	for (int32_t i = 0; i < a->n_batches; i++)
	{
		const ArrowBatchInfo *x = &a->batches[i];
		const ArrowBatchInfo *y = &b->batches[i];

		if (x->message_offset != y->message_offset || x->body_offset != y->body_offset ||
			x->body_length != y->body_length || x->n_rows != y->n_rows || x->codec != y->codec ||
			x->n_nodes != y->n_nodes || x->n_buffers != y->n_buffers ||
			memcmp(x->nodes, y->nodes, sizeof(ArrowNode) * x->n_nodes) != 0 ||
			memcmp(x->buffers, y->buffers, sizeof(ArrowBufferRef) * x->n_buffers) != 0 ||
			x->metadata.count != y->metadata.count || x->metadata.unique != y->metadata.unique)
			return false;
		for (int32_t k = 0; k < x->metadata.count; k++)
			if (strcmp(x->metadata.items[k].key, y->metadata.items[k].key) != 0 ||
				strcmp(x->metadata.items[k].value, y->metadata.items[k].value) != 0)
				return false;
	}
	return true;
}

/*
 * opens data with image (len bytes): *used, and whether it opened; the
 * rows into *rows (NULL: not wanted)
 */
static bool
open_with_image(const Seed *s, const void *image, uint64_t len, bool *used, char **rows)
{
	ArrowSource src;
	ArrowFile  *file;
	ArrowError	err;

	arrow_source_from_memory(&src, s->data, s->len);
	if (arrow_file_open_image(&src, NULL, image, len, &file, used, &err) != ARROW_OK)
		return false;
	if (rows != NULL)
		*rows = opened_rows(file, &err);
	arrow_file_close(file);
	return true;
}

static void
test_image(void)
{
	const Seed *other = find_seed("seed-primitives.file");

	for (int i = 0; i < n_seeds; i++)
	{
		const Seed *s = &seeds[i];
		ArrowSource src;
		ArrowFile  *file;
		ArrowFile  *again;
		ArrowError	err;
		void	   *image;
		uint64_t	len;
		bool		used;
		char	   *want;
		char	   *got = NULL;
		int			refused = 0,
					taken = 0,
					unopened = 0,
					wrong = 0;

		if (open_mem(s->data, s->len, NULL, &src, &file, &err) != ARROW_OK)
			continue;
		if (file->is_stream)
		{
			tap_ok(arrow_file_batches_image(file, NULL, &image, &len, &err) ==
				   ARROW_ERR_UNSUPPORTED, "%s: a stream has no image", s->name);
			arrow_file_close(file);
			continue;
		}
		if (file->n_batches > 0 && file->batches[0].column_first_buffer != NULL)
		{
			tap_ok(arrow_file_batches_image(file, NULL, &image, &len, &err) ==
				   ARROW_ERR_UNSUPPORTED, "%s: a file with view fields has no image", s->name);
			arrow_file_close(file);
			continue;
		}
		if (!tap_ok(arrow_file_batches_image(file, NULL, &image, &len, &err) == ARROW_OK,
					"%s: its image", s->name))
		{
			tap_diag("%s", err.message);
			arrow_file_close(file);
			continue;
		}
		want = opened_rows(file, &err);
		arrow_source_from_memory(&src, s->data, s->len);
		tap_ok(arrow_file_open_image(&src, NULL, image, len, &again, &used, &err) == ARROW_OK &&
			   used && same_batches(file, again),
			   "%s: the image taken gives the batches the messages give (%d)", s->name,
			   file->n_batches);
		got = used ? opened_rows(again, &err) : NULL;
		tap_ok(want != NULL && got != NULL && strcmp(want, got) == 0,
			   "%s: the same rows with the image", s->name);
		free(got);
		if (used)
			arrow_file_close(again);
		/* another file's image */
		if (other != NULL && other != s)
		{
			got = NULL;
			tap_ok(open_with_image(other, image, len, &used, &got) && !used && got != NULL,
				   "%s's image: refused by %s, which opens", s->name, other->name);
			free(got);
		}
		/* every truncation: refused, the rows the file's */
		for (uint64_t cut = 0; cut < len; cut++)
		{
			got = NULL;
			if (!open_with_image(s, image, cut, &used, cut % 97 == 0 ? &got : NULL))
				unopened++;
			else if (used)
				taken++;
			else if (got != NULL && strcmp(got, want) != 0)
				wrong++;
			free(got);
		}
		tap_ok(unopened == 0 && taken == 0 && wrong == 0,
			   "%s: %llu truncated images refused, the file read", s->name,
			   (unsigned long long) len);
		/* a byte changed at a time, throughout: never a crash or a failed open */
		unopened = 0;
		for (uint64_t at = 0; at < len; at += 1 + len / 400)
		{
			uint8_t    *bad = malloc(len);

			memcpy(bad, image, len);
			bad[at] ^= 0x5a;
			got = NULL;
			if (!open_with_image(s, bad, len, &used, &got))
				unopened++;
			else if (used)
				taken++;
			else
			{
				refused++;
				if (got == NULL || strcmp(got, want) != 0)
					wrong++;
			}
			free(got);
			free(bad);
		}
		tap_ok(unopened == 0 && wrong == 0,
			   "%s: changed images: %d refused (the file read), %d taken, none failed the open",
			   s->name, refused, taken);
		free(want);
		free(image);
		arrow_file_close(file);
	}
}

/*
 * opens data with the flat batches given: *used, and whether it opened;
 * the rows into *rows (NULL: not wanted); the file, closed, must leave the
 * batches alone (they are not its own: a free inside them fails under ASan)
 */
static bool
open_with_flat(const Seed *s, const ArrowFlatBatches *given, bool *used, char **rows)
{
	ArrowSource src;
	ArrowFile  *file;
	ArrowFile  *copy = NULL;
	ArrowError	err;

	arrow_source_from_memory(&src, s->data, s->len);
	if (arrow_file_open_flat(&src, NULL, given, &file, used, &err) != ARROW_OK)
		return false;
	if (rows != NULL)
		*rows = opened_rows(file, &err);
	/* a copy that borrows them, closed after the file */
	if (arrow_file_copy(file, &src, NULL, true, &copy, &err) == ARROW_OK)
	{
		arrow_file_close(file);
		file = copy;
	}
	arrow_file_close(file);
	return true;
}

/*
 * The batches laid out flat (arrow_batches_flat_copy, arrow_file_open_flat)
 * on every file seed: none for a stream, view fields or dictionaries; the
 * layout made from a file closed before it is used (every pointer inside
 * points into it) gives the batches and rows the messages give; a wrong
 * length is refused; another file's layout, or one batch short, is not
 * taken and the file opens with its own rows
 */
static void
test_flat(void)
{
	const Seed *other = find_seed("seed-primitives.file");

	for (int i = 0; i < n_seeds; i++)
	{
		const Seed *s = &seeds[i];
		ArrowSource src;
		ArrowFile  *file;
		ArrowError	err;
		ArrowFlatBatches g;
		uint64_t	len;
		uint64_t   *room;
		bool		used;
		bool		laid;
		char	   *want;
		char	   *got = NULL;

		if (open_mem(s->data, s->len, NULL, &src, &file, &err) != ARROW_OK)
			continue;
		len = arrow_batches_flat_len(file);
		if (file->is_stream || file->n_batches == 0 || file->n_dictionaries > 0 ||
			file->batches[0].column_first_buffer != NULL)
		{
			tap_ok(len == 0, "%s: no flat layout (stream, no batch, dictionaries or views)",
				   s->name);
			arrow_file_close(file);
			continue;
		}
		want = opened_rows(file, &err);
		room = malloc(len + 8);
		memset(&g, 0, sizeof(g));
		g.n_batches = file->n_batches;
		g.metadata_version = file->metadata_version;
		laid = arrow_batches_flat_copy(file, room, len - 8) == NULL &&
			arrow_batches_flat_copy(file, (uint8_t *) room + 4, len) == NULL &&
			(g.batches = arrow_batches_flat_copy(file, room, len)) == (void *) room;
		tap_ok(laid, "%s: laid out flat in %llu bytes (a wrong length or alignment refused)",
			   s->name, (unsigned long long) len);
		/* the original goes first: nothing of the layout may point into it */
		arrow_file_close(file);
		if (!laid)
		{
			free(room);
			free(want);
			continue;
		}
		if (open_mem(s->data, s->len, NULL, &src, &file, &err) == ARROW_OK)
		{
			ArrowFile  *flat;

			arrow_source_from_memory(&src, s->data, s->len);
			tap_ok(arrow_file_open_flat(&src, NULL, &g, &flat, &used, &err) == ARROW_OK &&
				   used && same_batches(file, flat) && flat->batches == g.batches,
				   "%s: the layout taken as it lies gives the messages' %d batches", s->name,
				   file->n_batches);
			if (used)
				arrow_file_close(flat);
			arrow_file_close(file);
		}
		tap_ok(open_with_flat(s, &g, &used, &got) && used && want != NULL && got != NULL &&
			   strcmp(want, got) == 0, "%s: the same rows with the layout", s->name);
		free(got);
		if (other != NULL && other != s)
		{
			got = NULL;
			tap_ok(open_with_flat(other, &g, &used, &got) && !used && got != NULL,
				   "%s's layout: not taken by %s, which opens", s->name, other->name);
			free(got);
		}
		g.n_batches--;
		got = NULL;
		tap_ok(open_with_flat(s, &g, &used, &got) && !used && got != NULL && want != NULL &&
			   strcmp(want, got) == 0, "%s: a layout one batch short is not taken", s->name);
		free(got);
		free(want);
		free(room);
	}
}

/*
 * arrow_file_copy on every file seed: a copy that shares the original's
 * batches (their array too), one that does not, and a shared copy of the
 * shared copy give the original's batches and rows; closing a copy leaves
 * the original and the other copies whole, and the original read again
 * after every copy is closed gives its rows (a copy that freed what it
 * borrowed is a use after free under ASan)
 */
static void
test_copy(void)
{
	for (int i = 0; i < n_seeds; i++)
	{
		const Seed *s = &seeds[i];
		ArrowSource src;
		ArrowFile  *file;
		ArrowFile  *shared = NULL;
		ArrowFile  *owned = NULL;
		ArrowFile  *second = NULL;
		ArrowError	err;
		char	   *want;
		char	   *got;
		bool		same;

		if (open_mem(s->data, s->len, NULL, &src, &file, &err) != ARROW_OK)
			continue;
		want = opened_rows(file, &err);
		if (want == NULL)
		{
			arrow_file_close(file);
			continue;
		}
		arrow_source_from_memory(&src, s->data, s->len);
		if (!tap_ok(arrow_file_copy(file, &src, NULL, true, &shared, &err) == ARROW_OK &&
					arrow_file_copy(file, &src, NULL, false, &owned, &err) == ARROW_OK &&
					arrow_file_copy(shared, &src, NULL, true, &second, &err) == ARROW_OK,
					"%s: copied three ways", s->name))
		{
			tap_diag("%s", err.message);
			arrow_file_close(shared);
			arrow_file_close(owned);
			arrow_file_close(file);
			free(want);
			continue;
		}
		tap_ok(same_batches(file, shared) && same_batches(file, owned) &&
			   same_batches(file, second),
			   "%s: every copy has the original's %d batches", s->name, file->n_batches);
		tap_ok(file->n_batches == 0 || (shared->batches == file->batches &&
										second->batches == file->batches &&
										owned->batches != file->batches),
			   "%s: the shared copies borrow the array of batches, the other has its own",
			   s->name);
		/* room for one more batch: the copy of the copy takes arrays of its own */
		tap_ok(arrow_reserve_batches(second, second->n_batches + 1, &err) == ARROW_OK &&
			   (file->n_batches == 0 || second->batches != file->batches) &&
			   same_batches(file, second),
			   "%s: a shared copy given room of its own keeps the original's batches", s->name);
		/* the shared copy closed first: the copy of it still reads */
		got = opened_rows(shared, &err);
		same = got != NULL && strcmp(got, want) == 0;
		free(got);
		arrow_file_close(shared);
		got = opened_rows(second, &err);
		same = same && got != NULL && strcmp(got, want) == 0;
		free(got);
		arrow_file_close(second);
		got = opened_rows(owned, &err);
		same = same && got != NULL && strcmp(got, want) == 0;
		free(got);
		arrow_file_close(owned);
		got = opened_rows(file, &err);
		tap_ok(same && got != NULL && strcmp(got, want) == 0,
			   "%s: the copies' rows and the original's after they are closed are its rows",
			   s->name);
		free(got);
		free(want);
		arrow_file_close(file);
	}
}

/*
 * A file written here of LARGE_BATCHES one-row batches, each with the
 * per-column keys pg_warp's statistics put in a batch (a thousand batches of
 * a wide table take about 2 MB of room): its image taken gives the batches
 * and rows the messages give, the room (the first batch's nodes) starts on
 * a huge-page boundary, and every value and key is read back as written
 */
#define LARGE_BATCHES	3000
#define LARGE_KEYS		24

static void
test_image_large(void)
{
	char		path[] = "/tmp/pg_warp_image_large.XXXXXX";
	ArrowField	field;
	ArrowSchema schema;
	ArrowWriter *w = NULL;
	ArrowBuilder *b = NULL;
	ArrowKeyValue items[LARGE_KEYS];
	char		keys[LARGE_KEYS][32];
	char		values[LARGE_KEYS][32];
	ArrowMetadata md = {LARGE_KEYS, items, false};
	ArrowFile  *file = NULL;
	ArrowFile  *again = NULL;
	ArrowSource src;
	ArrowError	err;
	void	   *image = NULL;
	uint64_t	len = 0;
	bool		used = false;
	int			fd = mkstemp(path);
	int			bad = 0;
	int			rc;
	char	   *want;
	char	   *got;
	uint8_t    *data;
	size_t		data_len = 0;

	if (!tap_ok(fd >= 0, "a file for %d batches", LARGE_BATCHES))
		return;
	close(fd);
	memset(&field, 0, sizeof(field));
	field.name = "v";
	field.nullable = true;
	field.type.id = ARROW_TYPE_INT32;
	memset(&schema, 0, sizeof(schema));
	schema.n_fields = 1;
	schema.fields = &field;
	for (int k = 0; k < LARGE_KEYS; k++)
	{
		snprintf(keys[k], sizeof(keys[k]), "pg_warp.%s.c%02d", k % 2 ? "max" : "min", k / 2);
		items[k].key = keys[k];
		items[k].value = values[k];
	}
	if (arrow_writer_create(path, &schema, NULL, &w, &err) != ARROW_OK ||
		arrow_builder_create(&field, NULL, &b, &err) != ARROW_OK)
		bad++;
	for (int i = 0; bad == 0 && i < LARGE_BATCHES; i++)
	{
		for (int k = 0; k < LARGE_KEYS; k++)
			snprintf(values[k], sizeof(values[k]), "%d", i * 1000 + k);
		if ((i % 7 == 0 ? arrow_append_null(b, &err) : arrow_append_int(b, i, &err)) != ARROW_OK ||
			arrow_writer_write_batch(w, &b, &md, &err) != ARROW_OK)
			bad++;
	}
	if (w != NULL && arrow_writer_close(w, &err) != ARROW_OK)
		bad++;
	arrow_builder_free(b);
	if (!tap_ok(bad == 0 && arrow_file_open(path, NULL, &file, &err) == ARROW_OK &&
				file->n_batches == LARGE_BATCHES, "%d batches written and read (%s)",
				LARGE_BATCHES, bad ? err.message : "ok"))
	{
		unlink(path);
		return;
	}
	rc = arrow_file_batches_image(file, NULL, &image, &len, &err);
	tap_ok(rc == ARROW_OK && len > ((uint64_t) 1 << 20), "its image (%llu bytes)",
		   (unsigned long long) len);
	want = opened_rows(file, &err);
	data = read_whole(path, &data_len);
	if (data != NULL)
		arrow_source_from_memory(&src, data, data_len);
	if (data != NULL &&
		arrow_file_open_image(&src, NULL, image, len, &again, &used, &err) == ARROW_OK)
	{
		tap_ok(used && same_batches(file, again), "the image taken gives the %d batches",
			   LARGE_BATCHES);
		tap_ok(!used || ((uintptr_t) again->batches[0].nodes & (((uintptr_t) 2 << 20) - 1)) == 0,
			   "the batches' room starts on a huge-page boundary");
		for (int i = 0; used && i < LARGE_BATCHES; i++)
			for (int k = 0; k < LARGE_KEYS; k++)
			{
				char		v[32];

				snprintf(v, sizeof(v), "%d", i * 1000 + k);
				snprintf(keys[0], sizeof(keys[0]), "pg_warp.%s.c%02d", k % 2 ? "max" : "min", k / 2);
				if (strcmp(again->batches[i].metadata.items[k].key, keys[0]) != 0 ||
					strcmp(again->batches[i].metadata.items[k].value, v) != 0 ||
					!again->batches[i].metadata.unique)
					bad++;
			}
		tap_ok(used && bad == 0, "every key and value as written, the keys known unique");
		got = used ? opened_rows(again, &err) : NULL;
		tap_ok(want != NULL && got != NULL && strcmp(want, got) == 0,
			   "the same rows with the image");
		free(got);
		arrow_file_close(again);
		/*
		 * a NUL in the first batch's key (a copied key), in the second's (a
		 * key compared with the first's) and in a value: the image refused,
		 * the file opened from its messages
		 */
		for (int t = 0; t < 3; t++)
		{
			const char *find = t < 2 ? "pg_warp.max.c03" : "pg_warp.max.c022005";
			size_t		flen = strlen(find);
			int			seen = 0;
			uint8_t    *bad = malloc(len);

			memcpy(bad, image, len);
			for (uint64_t at = 0; bad != NULL && at + flen <= len; at++)
				if (memcmp(bad + at, find, flen) == 0 && seen++ == (t == 1 ? 1 : 0))
				{
					bad[t < 2 ? at + 8 : at + flen - 4] = '\0';
					break;
				}
			used = true;
			tap_ok(bad != NULL && seen > 0 &&
				   arrow_file_open_image(&src, NULL, bad, len, &again, &used, &err) == ARROW_OK &&
				   !used && again->n_batches == LARGE_BATCHES,
				   "a NUL in %s: the image refused, the file read",
				   t == 0 ? "a copied key" : t == 1 ? "a key like the batch before's" : "a value");
			if (bad != NULL && seen > 0 && !used)
				arrow_file_close(again);
			free(bad);
		}
	}
	else
		tap_ok(false, "the file opened with its image (%s)", err.message);
	free(want);
	free(image);
	free(data);
	arrow_file_close(file);
	unlink(path);
}

/*
 * An image whose first batch's strings end unpadded at the image's end
 * (its length not a multiple of 8, as the head says): refused before the
 * second batch is looked for past the end (ASan)
 */
static void
test_image_unpadded(void)
{
	const Seed *s = find_seed("seed-batch-keys.file");
	ArrowSource src;
	ArrowFile  *file;
	ArrowError	err;
	void	   *image;
	uint64_t	len;
	uint8_t    *bad;
	uint64_t	bad_len = 32 + 48 + 8 + 1;
	uint32_t	one = 1,
				zero = 0;
	int32_t		n_meta = 1;
	bool		used = true;

	if (s == NULL || open_mem(s->data, s->len, NULL, &src, &file, &err) != ARROW_OK)
	{
		tap_ok(false, "seed-batch-keys.file opens");
		return;
	}
	if (!tap_ok(file->n_batches == 2 &&
				arrow_file_batches_image(file, NULL, &image, &len, &err) == ARROW_OK,
				"seed-batch-keys.file: two batches, its image"))
	{
		arrow_file_close(file);
		return;
	}
	bad = calloc(1, bad_len);
	memcpy(bad, image, 24);		/* the head: magic, 2 batches, the fields, the version */
	memcpy(bad + 24, &bad_len, 8);	/* its length */
	memcpy(bad + 32 + 44, &n_meta, 4);	/* batch 0: no nodes, no buffers, one pair */
	memcpy(bad + 32 + 48, &one, 4);	/* a key of 1 byte, a value of none */
	memcpy(bad + 32 + 52, &zero, 4);
	bad[32 + 56] = 'k';
	tap_ok(open_with_image(s, bad, bad_len, &used, NULL) && !used,
		   "an image ending in an unpadded string: refused, the file read");
	free(bad);
	free(image);
	arrow_file_close(file);
}

/*
 * The image's file (arrow_image_file.c): CRC-32C's check value, a write
 * then a map of the same identity gives the image back; another identity,
 * a changed byte, a cut file, a FIFO or nothing at the path give none.
 */
static void
test_image_file(void)
{
	char		dir[] = "/tmp/pg_warp_image_file.XXXXXX";
	char		path[256];
	char		tmp[256];
	ArrowFileIdentity id = {1, 2, 3, 4, 5};
	ArrowFileIdentity other = {1, 2, 3, 4, 6};
	uint8_t		image[1000];
	const void *got;
	void	   *map;
	size_t		map_len;
	uint64_t	len;
	FILE	   *f;
	long		size;

	tap_ok(arrow_crc32c("123456789", 9) == 0xE3069283u, "CRC-32C of \"123456789\" is E3069283");
	if (!tap_ok(mkdtemp(dir) != NULL, "a directory for image files"))
		return;
	snprintf(path, sizeof(path), "%s/img", dir);
	snprintf(tmp, sizeof(tmp), "%s/img.tmp", dir);
	for (size_t i = 0; i < sizeof(image); i++)
		image[i] = (uint8_t) (i * 7);
	tap_ok(arrow_image_file_map(path, &id, &len, &map, &map_len) == NULL && map == NULL,
		   "no file: no image");
	tap_ok(arrow_image_file_write(path, tmp, &id, "/some/source.arrow", image,
								  sizeof(image)) == 0 &&
		   access(tmp, F_OK) != 0, "written, the temporary file renamed");
	got = arrow_image_file_map(path, &id, &len, &map, &map_len);
	tap_ok(got != NULL && len == sizeof(image) && memcmp(got, image, len) == 0,
		   "mapped: the image written");
	arrow_image_file_unmap(map, map_len);
	tap_ok(arrow_image_file_map(path, &other, &len, &map, &map_len) == NULL,
		   "another identity (change time): no image");
	/* a byte of the image changed, then the file cut short */
	f = fopen(path, "r+b");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, size - 10, SEEK_SET);
	fputc(0x55, f);
	fclose(f);
	tap_ok(arrow_image_file_map(path, &id, &len, &map, &map_len) == NULL,
		   "a byte changed: no image (CRC)");
	arrow_image_file_write(path, tmp, &id, NULL, image, sizeof(image));
	got = arrow_image_file_map(path, &id, &len, &map, &map_len);
	tap_ok(got != NULL && len == sizeof(image) && memcmp(got, image, len) == 0,
		   "written without a source: mapped, the image written");
	arrow_image_file_unmap(map, map_len);
	/* a head whose source would run past the end of the file */
	f = fopen(path, "r+b");
	fseek(f, 60, SEEK_SET);
	fputc(0xF0, f);
	fputc(0x0F, f);
	fclose(f);
	tap_ok(arrow_image_file_map(path, &id, &len, &map, &map_len) == NULL,
		   "a source longer than the file: no image");
	arrow_image_file_write(path, tmp, &id, NULL, image, sizeof(image));
	tap_ok(truncate(path, size - 1) == 0 &&
		   arrow_image_file_map(path, &id, &len, &map, &map_len) == NULL,
		   "cut short: no image");
	unlink(path);
	tap_ok(mkfifo(path, 0600) == 0 &&
		   arrow_image_file_map(path, &id, &len, &map, &map_len) == NULL,
		   "a FIFO: no image, and no wait for a writer");
	unlink(path);
	tap_ok(arrow_image_file_write(path, "/nonexistent/dir/img.tmp", &id, NULL, image,
								  sizeof(image)) != 0 && access(path, F_OK) != 0,
		   "a write that cannot be made says so, writes nothing");
	rmdir(dir);
}

/* an image at dir/name of the file at source, of source's identity (ino + bump) */
static void
prune_image(const char *dir, const char *name, const char *source, int64_t bump,
			bool with_source)
{
	char		path[300];
	char		tmp[310];
	struct stat st;
	ArrowFileIdentity id = {0, 0, 0, 0, 0};
	uint8_t		image[64] = {0};

	if (stat(source, &st) == 0)
	{
		id.dev = (int64_t) st.st_dev;
		id.ino = (int64_t) st.st_ino + bump;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.1.tmp", path);
	arrow_image_file_write(path, tmp, &id, with_source ? source : NULL, image, sizeof(image));
}

static bool
exists_in(const char *dir, const char *name)
{
	char		path[300];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

/*
 * arrow_image_file_prune over a directory of images: of a source that
 * exists (kept), of one deleted since (removed), of a path that now names
 * another file (removed), one without a source (kept), an old and a new
 * temporary file (the old removed), a FIFO and a directory (kept)
 */
static void
test_image_file_prune(void)
{
	char		dir[] = "/tmp/pg_warp_image_prune.XXXXXX";
	char		src[400];
	char		img[200];
	const char *names[] = {"live.arrow", "deleted.arrow", "replaced.arrow", "nosource.arrow"};
	const char *left[] = {"a-1", "a-4", "a-6.78.tmp", "a-7"};
	struct timespec old[2];
	FILE	   *f;

	if (!tap_ok(mkdtemp(dir) != NULL, "a directory for sources and images"))
		return;
	snprintf(img, sizeof(img), "%s/img", dir);
	mkdir(img, 0700);
	for (int i = 0; i < 4; i++)
	{
		snprintf(src, sizeof(src), "%s/%s", dir, names[i]);
		f = fopen(src, "w");
		fputs("x", f);
		fclose(f);
	}
	snprintf(src, sizeof(src), "%s/live.arrow", dir);
	prune_image(img, "a-1", src, 0, true);
	snprintf(src, sizeof(src), "%s/deleted.arrow", dir);
	prune_image(img, "a-2", src, 0, true);
	unlink(src);
	snprintf(src, sizeof(src), "%s/replaced.arrow", dir);
	prune_image(img, "a-3", src, 1, true);	/* the path names another inode */
	snprintf(src, sizeof(src), "%s/nosource.arrow", dir);
	prune_image(img, "a-4", src, 0, false);
	unlink(src);
	snprintf(src, sizeof(src), "%s/a-5.77.tmp", img);
	f = fopen(src, "w");
	fclose(f);
	old[0].tv_sec = old[1].tv_sec = time(NULL) - 7200;
	old[0].tv_nsec = old[1].tv_nsec = 0;
	utimensat(AT_FDCWD, src, old, 0);
	snprintf(src, sizeof(src), "%s/a-6.78.tmp", img);
	f = fopen(src, "w");
	fclose(f);
	snprintf(src, sizeof(src), "%s/a-7", img);
	mkfifo(src, 0600);
	snprintf(src, sizeof(src), "%s/a-8", img);
	mkdir(src, 0700);

	tap_ok(arrow_image_file_prune(img, 3600) == 3, "pruned: three removed");
	tap_ok(exists_in(img, "a-1"), "the image of a file that exists stays");
	tap_ok(!exists_in(img, "a-2"), "the image of a deleted file goes");
	tap_ok(!exists_in(img, "a-3"), "the image of a path that names another file goes");
	tap_ok(exists_in(img, "a-4"), "an image without a source stays (its file is gone)");
	tap_ok(!exists_in(img, "a-5.77.tmp"), "an old temporary file goes");
	tap_ok(exists_in(img, "a-6.78.tmp"), "a new temporary file stays");
	tap_ok(exists_in(img, "a-7") && exists_in(img, "a-8"), "a FIFO and a directory stay");
	tap_ok(arrow_image_file_prune(img, 3600) == 0, "a second prune removes nothing");
	tap_ok(arrow_image_file_prune("/nonexistent/dir", 3600) == -1, "no directory: -1");

	rmdir(src);
	for (int i = 0; i < 4; i++)
	{
		snprintf(src, sizeof(src), "%s/%s", img, left[i]);
		unlink(src);
	}
	rmdir(img);
	snprintf(src, sizeof(src), "%s/live.arrow", dir);
	unlink(src);
	snprintf(src, sizeof(src), "%s/replaced.arrow", dir);
	unlink(src);
	rmdir(dir);
}
