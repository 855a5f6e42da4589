-- float2: pg_warp's IEEE 754 half-precision type (doc/float2.md).
-- test/python/test_float2.py checks every bit pattern against numpy; this
-- suite shows the semantics and the errors (with their SQLSTATE).
SET search_path = public, pgwarp;
SET extra_float_digits = 1;

-- the SQLSTATE and message of a statement's error, or 'ok'
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN others THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- the type: 2 bytes, by value, int2-aligned, in the extension's schema
SELECT typname, typnamespace::regnamespace, typlen, typbyval, typalign, typcategory
  FROM pg_type WHERE oid = 'float2'::regtype;

-- input: like float4in (white space, NaN, [+-]Infinity/inf, exponents, hex)
SELECT x AS input, x::float2 AS value
  FROM unnest(ARRAY['0', '-0', '1', ' 1.5 ', '0.1', '3.14159', '-2.5e3', '65504',
                    '65519.99', '6.1035156e-05', '6e-8', '2.9802322387695313e-8',
                    'NaN', 'nan', 'Infinity', '-inf', '+Infinity', '0x1.8p1', '0e-1000000']) x;
-- ties go to even: 2049 lies between 2048 and 2050, 2051 between 2050 and 2052
SELECT '2049'::float2, '2051'::float2, '2049.0000000000000000000001'::float2;
-- 1 + 2^-11 is halfway between 1 and 1.0009765625: the exact decimal decides
SELECT '1.00048828125'::float2, '1.00048828125000000000000001'::float2,
       '1.00048828124999999999999999'::float2;
-- errors: out of range (22003) as float4in, bad syntax (22P02)
SELECT pg_temp.err($$SELECT '65520'::float2$$);
SELECT pg_temp.err($$SELECT '-1e5'::float2$$);
SELECT pg_temp.err($$SELECT '1e-8'::float2$$);
SELECT pg_temp.err($$SELECT '2.98023223876953125e-8'::float2$$);
SELECT pg_temp.err($$SELECT ''::float2$$);
SELECT pg_temp.err($$SELECT 'one'::float2$$);
SELECT pg_temp.err($$SELECT '1.5 x'::float2$$);

-- output: the shortest decimal that reads back, formatted as float4out
SELECT h, h::float8 AS exact
  FROM unnest('{0.1, 0.2, 0.3333, 1.001, 100, 1000.5, 65504, 0.0001, 0.00001, 6e-8, -0}'::float2[]) h;
SET extra_float_digits = 0;
SELECT '0.1'::float2, '1.001'::float2, '65504'::float2, '6e-8'::float2;
SET extra_float_digits = 3;
SELECT '0.1'::float2, '1.001'::float2;
RESET extra_float_digits;

-- binary I/O: two bytes, network order
SELECT float2send('1'), float2send('-2'), float2send('65504'), float2send('Infinity'),
       float2send('NaN'), float2send('6e-8');

-- casts, with float4's contexts
SELECT 1.5::float2::float4, '0.1'::float2::float8, '0.1'::float2::numeric,
       'Infinity'::float2::numeric, 'NaN'::float2::float8;
SELECT 0.1::float4::float2, 0.1::float8::float2, 0.1::numeric::float2, 12345::int4::float2,
       (-32768)::int2::float2, 2051::int8::float2;
SELECT 2.5::float2::int2, 3.5::float2::int4, (-1.5)::float2::int8;
SELECT pg_temp.err($$SELECT 65520::int4::float2$$);
SELECT pg_temp.err($$SELECT 1e5::float4::float2$$);
SELECT pg_temp.err($$SELECT 1e-9::float8::float2$$);
SELECT pg_temp.err($$SELECT 70000::numeric::float2$$);
SELECT pg_temp.err($$SELECT 40000::float2::int2$$);
SELECT pg_temp.err($$SELECT 'NaN'::float2::int4$$);
SELECT pg_temp.err($$SELECT '-Infinity'::float2::int8$$);
SELECT 'NaN'::float4::float2, '-Infinity'::float8::float2, '-0'::float4::float2;
SELECT s.typname AS source, t.typname AS target, c.castcontext
  FROM pg_cast c JOIN pg_type s ON s.oid = c.castsource JOIN pg_type t ON t.oid = c.casttarget
 WHERE 'float2' IN (s.typname, t.typname) ORDER BY 1, 2;

-- arithmetic: float4 rounded to float2; mixed forms are float4's / float8's
SELECT '1.5'::float2 + '2.25'::float2 AS add, '1'::float2 - '0.1'::float2 AS sub,
       '3'::float2 * '0.1'::float2 AS mul, '1'::float2 / '3'::float2 AS div,
       -'2'::float2 AS neg, +'2'::float2 AS pos, abs('-3'::float2) AS abs, @ '-4'::float2 AS at;
SELECT pg_typeof('1'::float2 + '1'::float2), pg_typeof('1'::float2 + 1::float4),
       pg_typeof(1::float4 * '1'::float2), pg_typeof('1'::float2 / 1::float8),
       pg_typeof('1'::float2 + 1), pg_typeof('1'::float2 + 1.5);
SELECT '0.1'::float2 + 0.1::float4 AS f4, '0.1'::float2 + 0.1::float8 AS f8;
SELECT pg_temp.err($$SELECT '65504'::float2 + '16'::float2$$);
SELECT pg_temp.err($$SELECT '300'::float2 * '300'::float2$$);
SELECT pg_temp.err($$SELECT '6e-8'::float2 * '0.25'::float2$$);
SELECT pg_temp.err($$SELECT '1'::float2 / '0'::float2$$);
SELECT pg_temp.err($$SELECT '1'::float2 / 0::float4$$);
SELECT 'Infinity'::float2 + '1'::float2, 'Infinity'::float2 - 'Infinity'::float2,
       'NaN'::float2 / '0'::float2, '65504'::float2 + '15'::float2;

-- comparisons: NaN equals NaN and is above everything; -0 = 0
SELECT 'NaN'::float2 = 'NaN'::float2 AS nan_eq, 'NaN'::float2 > 'Infinity'::float2 AS nan_gt,
       '-0'::float2 = '0'::float2 AS zeros, '0.1'::float2 = 0.1::float4 AS f4_eq,
       '0.1'::float2 = 0.1 AS f8_eq, '0.5'::float2 = 0.5 AS exact, '1'::float2 < 1.0001::float4,
       2::float8 >= '2'::float2, '1'::float2 <> '2'::float2;

-- operator classes: indexes, GROUP BY, DISTINCT, ORDER BY, joins
CREATE TABLE f2 (id int, h float2);
INSERT INTO f2 SELECT i, ((i % 41) - 20) / 4.0 FROM generate_series(1, 2000) i;
INSERT INTO f2 VALUES (3001, 'NaN'), (3002, 'Infinity'), (3003, '-Infinity'), (3004, '-0'), (3005, NULL);
CREATE INDEX f2_h ON f2 (h);
ANALYZE f2;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM f2 WHERE h = 2.5;
EXPLAIN (COSTS OFF) SELECT id FROM f2 WHERE h BETWEEN -1::float4 AND '1'::float2;
SELECT count(*) FROM f2 WHERE h = 2.5;
SELECT count(*) FROM f2 WHERE h BETWEEN -1::float4 AND '1'::float2;
SELECT id, h FROM f2 WHERE h > 4.5 ORDER BY h, id LIMIT 5;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT h, count(*) FROM f2 GROUP BY h ORDER BY h DESC LIMIT 6;
SET enable_hashagg = off;
SELECT count(DISTINCT h), count(*) FROM (SELECT DISTINCT h FROM f2) d;
RESET enable_hashagg;
SELECT count(DISTINCT h) FROM f2;
CREATE TABLE f4 AS SELECT id, h::float4 AS f FROM f2 WHERE id % 3 = 0;
ANALYZE f4;
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM f2 JOIN f4 ON f2.h = f4.f;
SELECT count(*) FROM f2 JOIN f4 ON f2.h = f4.f;
RESET enable_mergejoin;
SET enable_hashjoin = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM f2 a JOIN f2 b ON a.h = b.h;
SELECT count(*) FROM f2 a JOIN f2 b ON a.h = b.h;
RESET enable_hashjoin;
RESET enable_nestloop;
SELECT count(*) FROM f2 JOIN f4 ON f2.h::float4 = f4.f;

-- aggregates: sum as sum(float4), avg/stddev/variance in float8, min/max as float2
SELECT sum(h), avg(h), min(h), max(h), stddev(h), stddev_pop(h), var_samp(h), var_pop(h)
  FROM f2 WHERE id < 3000;
SELECT sum(h::float4), avg(h::float8), stddev(h::float8), var_pop(h::float8)
  FROM f2 WHERE id < 3000;
SELECT sum(h), avg(h), min(h), max(h) FROM f2;
SELECT pg_typeof(sum(h)), pg_typeof(avg(h)), pg_typeof(min(h)), pg_typeof(stddev(h)) FROM f2;
SELECT sum(h), avg(h), max(h) FROM f2 WHERE false;

-- window frames: RANGE with an offset (in_range), as for real
SELECT h, sum(h) OVER (ORDER BY h RANGE BETWEEN 0.5 PRECEDING AND CURRENT ROW)
  FROM unnest('{1, 1.25, 2, 3.5, NaN}'::float2[]) h;

-- a domain over float2
CREATE DOMAIN positive_half AS float2 CHECK (VALUE > 0);
SELECT '1.5'::positive_half + '1'::positive_half;
SELECT pg_temp.err($$SELECT '-1'::positive_half$$);

DROP TABLE f2, f4;
DROP DOMAIN positive_half;
