-- Primary keys for the SSB tables, added after loading (an index built once over
-- loaded rows is much cheaper than one maintained row by row during COPY).
-- The lineorder key (lo_orderkey, lo_linenumber) helps none of the 13 queries and
-- costs a sort of the whole fact table, so it is built only on request:
--   psql -v lineorder_pk=1 -f keys.sql
ALTER TABLE date1    ADD PRIMARY KEY (d_datekey);
ALTER TABLE customer ADD PRIMARY KEY (c_custkey);
ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey);
ALTER TABLE part     ADD PRIMARY KEY (p_partkey);
\if :{?lineorder_pk}
ALTER TABLE lineorder ADD PRIMARY KEY (lo_orderkey, lo_linenumber);
\endif
