/*-------------------------------------------------------------------------
 *
 * gpu_join_cache.c
 *		GpuJoin's inner tables kept by the service for later queries: which
 *		tables may be kept, the key that says what rows a table holds, and
 *		the version that says the relation still holds those rows.
 *
 * A star query's dimensions change seldom, and building their inner tables
 * (PostgreSQL runs each inner plan, the backend converts the rows) took
 * most of the time of the SSB queries that read large dimensions on the GPU
 * host (bench/results/README.md).  So the service keeps a table it was told
 * to keep (WARP_JOIN_CACHE, src/service/join_store.c) under two digests the
 * backend makes:
 *
 * key		what the table holds: the database, the relation (its OID and
 *			file: a rewrite makes a new key), the depth's filters, inner keys
 *			and payload columns as planned (gj_cache_plan: node trees with the
 *			relation's range table index and the parse locations taken out,
 *			so that the same clauses of another query give the same text) and
 *			the table's layout (key and payload types, the outer keys' types);
 * version	the state of the relation the rows were read from: its size in
 *			blocks and the LSN of every page of its visibility map, taken
 *			only when every block is all-visible.
 *
 * Why the version proves the rows unchanged.  A block is all-visible when
 * every tuple in it is visible to every transaction, now and later: the
 * rows of an all-visible relation are the same for every snapshot.  Any
 * change of a tuple (insert, update, delete; not a hint bit or a row lock)
 * clears its block's bit in the visibility map, and only VACUUM sets it
 * again, WAL-logged, which writes a new LSN on that map page (a relation
 * that is not WAL-logged, unlogged or temporary, is never kept: its map
 * pages get no LSN).  A new block changes the size; TRUNCATE, VACUUM FULL
 * and CLUSTER give the relation a new file, hence a new key.  So if every
 * block is all-visible and the map pages' LSNs are those of the build, no
 * tuple changed since.  The version is taken as LSNs, bits, LSNs, and is
 * only good when both LSN passes agree: a change and a VACUUM between them
 * cannot pass unseen.  A table is kept only when the version before its
 * build equals the version after it; a later query uses it only when the
 * version it takes now equals the kept one (the service drops a kept table
 * of another version).  A change that commits after the version was taken
 * is one the query's snapshot, taken before, does not see.
 *
 * An arrow_fdw table's rows are its files' (arrow_fdw reads nothing else),
 * so its version is the list of the files it reads now (its options: a
 * "dir" that gains or loses a file changes it) with each file's identity:
 * device, inode, size, modification and change times, as arrow_fdw's
 * metadata cache knows a file (fdw/file.c).  A file replaced (a new inode),
 * rewritten or appended to, or whose table names other files, gives another
 * version.  The caveat is the metadata cache's: a rewrite in place that
 * keeps the size within the file system's timestamp granularity of the
 * write before it, which also changed the file after the version was
 * taken, goes unseen.
 *
 * Only filters and columns whose values depend on nothing but the rows are
 * kept (no volatile or stable function: not now(), not a setting; no
 * function that is not built in, whose body may be replaced under the same
 * OID; no subquery, no parameter: not a prepared statement's $1), and no
 * relation with row level security (whose
 * policies depend on the user).  Privileges are the query's own: the inner
 * plan stays in the plan and PostgreSQL checks them at executor start.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <regex.h>
#include <sys/stat.h>

#include "access/transam.h"
#include "access/visibilitymap.h"
#include "commands/explain.h"
#include "catalog/pg_class.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "engine/gpu_join.h"
#include "fdw/fdw_scan.h"
#include "xpu/file_id.h"
#include "xpu/protocol.h"

/* pg_warp.gpujoin_cache: look for kept tables and keep new ones */
bool		pg_warp_gpujoin_cache = true;

/* the node text without what differs between two queries of the same clauses */
static char *
gj_cache_text(Node *node)
{
	char	   *s = nodeToString(node);
	StringInfoData out;
	regex_t		re;
	regmatch_t	m;
	const char *p = s;

	if (regcomp(&re, " :(location|varnosyn|varattnosyn) -?[0-9]+", REG_EXTENDED) != 0)
		elog(ERROR, "GpuJoin: could not compile a regular expression");
	initStringInfo(&out);
	while (regexec(&re, p, 1, &m, 0) == 0)
	{
		appendBinaryStringInfo(&out, p, m.rm_so);
		p += m.rm_eo;
	}
	appendStringInfoString(&out, p);
	regfree(&re);
	pfree(s);
	return out.data;
}

/* is func_id a function that CREATE OR REPLACE may change (not built in)? */
static bool
gj_cache_replaceable(Oid func_id, void *context)
{
	return func_id >= FirstNormalObjectId;
}

/*
 * does node read a Param (a prepared statement's value, an outer query's),
 * or call a function that is not built in (whose body CREATE OR REPLACE
 * may change while its OID, the key's, stays)?
 */
static bool
gj_cache_unkeyable(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) ||
		check_functions_in_node(node, gj_cache_replaceable, context))
		return true;
	return expression_tree_walker(node, gj_cache_unkeyable, context);
}

/*
 * gj_cache_plan: the plan item that lets the executor keep depth d's inner
 * table for later queries (its relation's OID and the key text), or NIL
 * where its rows may not be kept (see above)
 */
List *
gj_cache_plan(PlannerInfo *root, const GjDepth *d)
{
	RangeTblEntry *rte = planner_rt_fetch(d->rel->relid, root);
	List	   *quals = NIL;
	Node	   *what;
	ListCell   *lc;

	if (rte->rtekind != RTE_RELATION || rte->inh || rte->tablesample != NULL ||
		rte->securityQuals != NIL)
		return NIL;
	if (!(rte->relkind == RELKIND_FOREIGN_TABLE && arrow_fdw_is_table(rte->relid)) &&
		(rte->relkind != RELKIND_RELATION ||
		 get_rel_persistence(rte->relid) != RELPERSISTENCE_PERMANENT))
		return NIL;
	foreach(lc, d->rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst(lc);

		if (ri->security_level > 0)
			return NIL;
		quals = lappend(quals, ri->clause);
	}
	what = (Node *) list_make3(quals, d->inner_keys, d->pay_vars);
	if (contain_mutable_functions(what) || contain_subplans(what) ||
		gj_cache_unkeyable(what, NULL))
		return NIL;
	what = copyObject(what);
	ChangeVarNodes(what, d->rel->relid, 1, 0);
	return list_make2(makeString(psprintf("%u", rte->relid)),
					  makeString(gj_cache_text(what)));
}

/* sha256 of a buffer into out */
static void
gj_digest_update(pg_cryptohash_ctx *ctx, const void *data, size_t len)
{
	if (pg_cryptohash_update(ctx, data, len) < 0)
		elog(ERROR, "GpuJoin: could not compute a digest: %s", pg_cryptohash_error(ctx));
}

static pg_cryptohash_ctx *
gj_digest_begin(void)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);

	if (ctx == NULL || pg_cryptohash_init(ctx) < 0)
		elog(ERROR, "GpuJoin: could not compute a digest");
	return ctx;
}

static void
gj_digest_end(pg_cryptohash_ctx *ctx, uint8 *out)
{
	if (pg_cryptohash_final(ctx, out, PG_SHA256_DIGEST_LENGTH) < 0)
		elog(ERROR, "GpuJoin: could not compute a digest: %s", pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
}

/*
 * gj_cache_key: the key digest of the table built from spec (probe types
 * set; pay_scales: the numeric payload columns' scales) by the inner plan
 * of the plan item item (gj_cache_plan) over rel
 */
void
gj_cache_key(List *item, Relation rel, const XpuJoinSpec *spec, const int16 *pay_scales,
			 uint8 *out)
{
	pg_cryptohash_ctx *ctx = gj_digest_begin();
	const char *text = strVal(lsecond(item));
	Oid			ids[2] = {MyDatabaseId, RelationGetRelid(rel)};

	gj_digest_update(ctx, "pg_warp gpujoin 1", 17);
	gj_digest_update(ctx, ids, sizeof(ids));
	gj_digest_update(ctx, &rel->rd_node, sizeof(rel->rd_node));
	gj_digest_update(ctx, &spec->n_keys, sizeof(spec->n_keys));
	for (int k = 0; k < spec->n_keys; k++)
	{
		const XpuJoinKeyDesc *kd = &spec->keys[k];
		int16		f[4] = {kd->type, kd->probe_type, kd->scale, kd->probe_scale};

		gj_digest_update(ctx, f, sizeof(f));
	}
	gj_digest_update(ctx, &spec->n_pay, sizeof(spec->n_pay));
	gj_digest_update(ctx, spec->pay_types, spec->n_pay);
	gj_digest_update(ctx, pay_scales, sizeof(int16) * spec->n_pay);
	gj_digest_update(ctx, &spec->form, sizeof(spec->form));
	gj_digest_update(ctx, text, strlen(text) + 1);
	gj_digest_end(ctx, out);
}

/* the LSN of each page of rel's visibility map, appended to *lsns; false: no map */
static bool
gj_vm_lsns(Relation rel, XLogRecPtr **lsns, BlockNumber *n)
{
	SMgrRelation smgr = RelationGetSmgr(rel);

	if (!smgrexists(smgr, VISIBILITYMAP_FORKNUM))
		return false;
	*n = smgrnblocks(smgr, VISIBILITYMAP_FORKNUM);
	*lsns = palloc(sizeof(XLogRecPtr) * Max(*n, 1));
	for (BlockNumber b = 0; b < *n; b++)
	{
		Buffer		buf = ReadBufferExtended(rel, VISIBILITYMAP_FORKNUM, b, RBM_NORMAL, NULL);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		(*lsns)[b] = PageGetLSN(BufferGetPage(buf));
		UnlockReleaseBuffer(buf);
	}
	return true;
}

/*
 * gj_cache_arrow_version: the version digest of arrow_fdw table rel's rows
 * (see above) into out; false where a file cannot be stat'ed or is not a
 * regular file
 */
static bool
gj_cache_arrow_version(Relation rel, uint8 *out)
{
	List	   *files = arrow_fdw_table_files(RelationGetRelid(rel));
	int			n = list_length(files);
	pg_cryptohash_ctx *ctx = gj_digest_begin();
	ListCell   *lc;

	gj_digest_update(ctx, "arrow_fdw", 9);
	gj_digest_update(ctx, &n, sizeof(n));
	foreach(lc, files)
	{
		const char *path = lfirst(lc);
		struct stat st;
		WarpFileId	id;

		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		{
			pg_cryptohash_free(ctx);
			return false;
		}
		id = warp_file_id_of(&st);
		gj_digest_update(ctx, path, strlen(path) + 1);
		gj_digest_update(ctx, &id, sizeof(id));
	}
	gj_digest_end(ctx, out);
	return true;
}

/*
 * gj_cache_version: the version digest of rel's rows (see above) into out;
 * false where they may not be kept now (a block that is not all-visible, a
 * relation that is not WAL-logged, a change while it looked; an arrow_fdw
 * table's file that cannot be stat'ed)
 */
bool
gj_cache_version(Relation rel, uint8 *out)
{
	BlockNumber nblocks,
				n1,
				n2;
	XLogRecPtr *lsn1,
			   *lsn2;
	Buffer		vmbuf = InvalidBuffer;
	bool		visible = true;
	pg_cryptohash_ctx *ctx;

	if (rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE)
		return arrow_fdw_is_table(RelationGetRelid(rel)) && gj_cache_arrow_version(rel, out);
	if (!RelationNeedsWAL(rel) || rel->rd_rel->relkind != RELKIND_RELATION)
		return false;
	nblocks = RelationGetNumberOfBlocks(rel);
	if (nblocks > 0 && !gj_vm_lsns(rel, &lsn1, &n1))
		return false;
	for (BlockNumber b = 0; b < nblocks && visible; b++)
	{
		if ((b & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		visible = (visibilitymap_get_status(rel, b, &vmbuf) & VISIBILITYMAP_ALL_VISIBLE) != 0;
	}
	if (BufferIsValid(vmbuf))
		ReleaseBuffer(vmbuf);
	if (!visible || RelationGetNumberOfBlocks(rel) != nblocks)
		return false;
	ctx = gj_digest_begin();
	gj_digest_update(ctx, &nblocks, sizeof(nblocks));
	if (nblocks > 0)
	{
		if (!gj_vm_lsns(rel, &lsn2, &n2) || n2 != n1 ||
			memcmp(lsn1, lsn2, sizeof(XLogRecPtr) * n1) != 0)
		{
			pg_cryptohash_free(ctx);
			return false;
		}
		gj_digest_update(ctx, lsn1, sizeof(XLogRecPtr) * n1);
	}
	gj_digest_end(ctx, out);
	return true;
}

void
gj_cache_init(void)
{
	DefineCustomBoolVariable("pg_warp.gpujoin_cache",
							 "Use and keep the GpuJoin inner tables the pg_warp service keeps.",
							 "A join depth whose relation is unchanged since an earlier query "
							 "read the same rows probes the table that query built "
							 "(pg_warp.gpujoin_cache_size limits them).",
							 &pg_warp_gpujoin_cache, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
}
