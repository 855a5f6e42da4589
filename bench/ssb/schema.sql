-- Star Schema Benchmark tables for PostgreSQL (bench/ssb/ssbgen writes their rows).
--
-- Columns follow the SSB specification (O'Neil et al., revision 3) in its common
-- PostgreSQL form: lineorder's 17 columns, the date table named date1 (DATE is a
-- type name), every column NOT NULL.  Types: integers wherever the values are
-- integers (prices are in cents, as the reference generator prints them, so
-- sums are exact and no numeric arithmetic is needed); lo_orderkey is bigint
-- (1,500,000 x SF orders passes 2^31 above SF 1431); text columns are varchar
-- with the specification's widths; the date flags are boolean.
--
-- Primary keys are added after loading by keys.sql (load.sh does that).

SET client_min_messages = warning;
DROP TABLE IF EXISTS lineorder, customer, supplier, part, date1;

CREATE TABLE lineorder (
    lo_orderkey       bigint      NOT NULL,
    lo_linenumber     integer     NOT NULL,  -- 1..7
    lo_custkey        integer     NOT NULL,  -- customer.c_custkey
    lo_partkey        integer     NOT NULL,  -- part.p_partkey
    lo_suppkey        integer     NOT NULL,  -- supplier.s_suppkey
    lo_orderdate      integer     NOT NULL,  -- date1.d_datekey (YYYYMMDD)
    lo_orderpriority  varchar(15) NOT NULL,  -- 1-URGENT .. 5-LOW
    lo_shippriority   varchar(1)  NOT NULL,  -- '0'
    lo_quantity       integer     NOT NULL,  -- 1..50
    lo_extendedprice  integer     NOT NULL,  -- cents: quantity * part retail price
    lo_ordtotalprice  integer     NOT NULL,  -- cents: the order's total
    lo_discount       integer     NOT NULL,  -- 0..10 (percent)
    lo_revenue        integer     NOT NULL,  -- cents: extendedprice * (100 - discount) / 100
    lo_supplycost     integer     NOT NULL,  -- cents: 6 * retail price / 10
    lo_tax            integer     NOT NULL,  -- 0..8 (percent)
    lo_commitdate     integer     NOT NULL,  -- date1.d_datekey: orderdate + 30..90 days
    lo_shipmode       varchar(10) NOT NULL   -- AIR, FOB, MAIL, RAIL, REG AIR, SHIP, TRUCK
);

CREATE TABLE customer (
    c_custkey     integer     NOT NULL,
    c_name        varchar(25) NOT NULL,  -- Customer#000000001
    c_address     varchar(25) NOT NULL,
    c_city        varchar(10) NOT NULL,  -- nation cut/padded to 9 chars + digit
    c_nation      varchar(15) NOT NULL,  -- 25 nations
    c_region      varchar(12) NOT NULL,  -- 5 regions
    c_phone       varchar(15) NOT NULL,
    c_mktsegment  varchar(10) NOT NULL
);

CREATE TABLE supplier (
    s_suppkey  integer     NOT NULL,
    s_name     varchar(25) NOT NULL,  -- Supplier#000000001
    s_address  varchar(25) NOT NULL,
    s_city     varchar(10) NOT NULL,
    s_nation   varchar(15) NOT NULL,
    s_region   varchar(12) NOT NULL,
    s_phone    varchar(15) NOT NULL
);

CREATE TABLE part (
    p_partkey    integer     NOT NULL,
    p_name       varchar(22) NOT NULL,  -- two colour words
    p_mfgr       varchar(6)  NOT NULL,  -- MFGR#1 .. MFGR#5
    p_category   varchar(7)  NOT NULL,  -- MFGR#11 .. MFGR#55
    p_brand1     varchar(9)  NOT NULL,  -- MFGR#1101 .. MFGR#5540
    p_color      varchar(11) NOT NULL,
    p_type       varchar(25) NOT NULL,
    p_size       integer     NOT NULL,  -- 1..50
    p_container  varchar(10) NOT NULL
);

CREATE TABLE date1 (
    d_datekey           integer     NOT NULL,  -- YYYYMMDD
    d_date              varchar(18) NOT NULL,  -- January 1, 1992
    d_dayofweek         varchar(9)  NOT NULL,  -- Sunday .. Saturday
    d_month             varchar(9)  NOT NULL,  -- January .. December
    d_year              integer     NOT NULL,  -- 1992 .. 1998
    d_yearmonthnum      integer     NOT NULL,  -- 199201
    d_yearmonth         varchar(7)  NOT NULL,  -- Jan1992
    d_daynuminweek      integer     NOT NULL,  -- 1 (Sunday) .. 7
    d_daynuminmonth     integer     NOT NULL,  -- 1..31
    d_daynuminyear      integer     NOT NULL,  -- 1..366
    d_monthnuminyear    integer     NOT NULL,  -- 1..12
    d_weeknuminyear     integer     NOT NULL,  -- 1..53
    d_sellingseason     varchar(12) NOT NULL,  -- Winter, Spring, Summer, Fall, Christmas
    d_lastdayinweekfl   boolean     NOT NULL,
    d_lastdayinmonthfl  boolean     NOT NULL,
    d_holidayfl         boolean     NOT NULL,
    d_weekdayfl         boolean     NOT NULL
);
