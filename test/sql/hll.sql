-- HyperLogLog sketches (doc/hll.md): hll_count, hll_sketch, hll_merge,
-- hll_combine, hll_sketch_histogram and pg_warp.hll_registers_bits.
-- The functions resolve unqualified for a search_path that has pgwarp.
SET search_path = pgwarp, public;
SHOW pg_warp.hll_registers_bits;
-- small cardinalities are exact; NULLs are ignored; no rows count 0
SELECT hll_count(g) FROM generate_series(1, 5) g;
SELECT hll_count(x) FROM (VALUES (1), (NULL), (2), (2), (NULL)) v(x);
SELECT hll_count(g) FROM generate_series(1, 0) g;
SELECT hll_count(NULL::int);
SELECT n, (SELECT hll_count(g) FROM generate_series(1, n) g) = n AS exact
  FROM unnest(ARRAY[0, 1, 2, 10, 99, 100, 1000]) n;
-- equal values of different representations count once
SELECT hll_count(x) FROM (VALUES (1.0::numeric), (1.00), (1), (-0.0), (0), ('NaN')) v(x);
SELECT hll_count(x) FROM (VALUES ('0'::float8), ('-0'), ('NaN'), ('-NaN'), (1)) v(x);
SELECT hll_sketch(1::int2) = hll_sketch(1::int8) AS int2_int8,
       hll_sketch(7::int4) = hll_sketch(7::int8) AS int4_int8,
       hll_sketch(1.5::float4) = hll_sketch(1.5::float8) AS float4_float8,
       hll_sketch('ab'::text) = hll_sketch('ab'::varchar) AS text_varchar,
       hll_sketch('ab '::char(5)) = hll_sketch('ab'::text) AS bpchar_text,
       hll_sketch(1::int8) = hll_sketch(2::int8) AS one_two;
-- other types: by-value bytes or the binary send form
SELECT hll_count(x) FROM (VALUES (date '2024-01-01'), ('2024-01-01'), ('2024-01-02')) v(x);
SELECT hll_count(x) FROM (VALUES (ARRAY[1,2]), (ARRAY[1,2]), (ARRAY[2,1])) v(x);
SELECT hll_count(x) FROM (VALUES ('a'::text), ('b'), ('a'), ('')) v(x);
-- sketches: the empty one, merge and combine, the histogram
SELECT hll_sketch(g) FROM generate_series(1, 0) g;
SELECT hll_combine(s) FROM (SELECT NULL::bytea) v(s);
SELECT hll_merge(s) FROM (SELECT NULL::bytea) v(s);
SELECT hll_sketch(g) FROM generate_series(1, 2) g;
SELECT hll_merge(s) FROM (SELECT hll_sketch(g) FROM generate_series(1, 300) g GROUP BY g % 3) v(s);
SELECT hll_combine(s) = (SELECT hll_sketch(g) FROM generate_series(1, 3000) g)
  FROM (SELECT hll_sketch(g) FROM generate_series(1, 3000) g GROUP BY g % 4) v(s);
SELECT length(hll_sketch(g)) FROM generate_series(1, 3000) g;
SELECT h[0] AS empty_registers, array_lower(h, 1), array_upper(h, 1),
       (SELECT sum(x) FROM unnest(h) x) AS registers
  FROM (SELECT hll_sketch_histogram(hll_sketch(g)) FROM generate_series(1, 3) g) v(h);
-- the precision: a GUC, stored in the sketch; merges fold to the lower one
SET pg_warp.hll_registers_bits = 10;
SELECT get_byte(hll_sketch(1), 3) AS p, length(hll_sketch(g)) FROM generate_series(1, 1000) g;
SELECT array_upper(hll_sketch_histogram(hll_sketch(1)), 1);
SET pg_warp.hll_registers_bits = 3;
SET pg_warp.hll_registers_bits = 19;
RESET pg_warp.hll_registers_bits;
-- corrupt or foreign values are errors (22P03)
\set VERBOSITY default
SELECT hll_merge('\x'::bytea);
SELECT hll_merge('\x5848010e0000000000'::bytea);
SELECT hll_merge('\x5748020e0000000000'::bytea);
SELECT hll_merge('\x574801130000000000'::bytea);
SELECT hll_merge('\x5748010e0200000000'::bytea);
SELECT hll_merge('\x5748010e0000000100'::bytea);
SELECT hll_merge('\x5748010e0000000000aa'::bytea);
SELECT hll_merge('\x5748010e00000000' || '\x0200000000000000'::bytea || '\x0100000000000000'::bytea);
SELECT hll_merge('\x5748010e01000000'::bytea);
SELECT hll_merge('\x5748010400000000' || '\x0100000000000000'::bytea || '\x0200000000000000'::bytea);
SELECT hll_merge('\x5748010401000000ffffffffffffffffffffffff'::bytea);
SELECT hll_combine(x) FROM (VALUES ('\x57'::bytea)) v(x);
SELECT hll_sketch_histogram('\x00'::bytea);
-- strings in a nondeterministic collation are refused
SELECT hll_count(x COLLATE "C") FROM (VALUES ('a'::text)) v(x);
RESET search_path;
