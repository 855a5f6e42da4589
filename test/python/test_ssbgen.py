"""Tests of the Star Schema Benchmark generator, bench/ssb/ssbgen.

Builds ssbgen with make, generates SF 0.01 (and SF 0.1 for the query checks)
and checks row counts, determinism across runs and chunkings, value domains and
foreign keys, the date table against Python's calendar, and — with DuckDB, not
PostgreSQL — that the 13 query files run and select the fractions of lineorder
that the SSB specification's value domains predict.
"""
import datetime
import hashlib
import math
import os
import re
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SSB = os.path.join(ROOT, "bench", "ssb")
SSBGEN = os.path.join(SSB, "ssbgen")
TABLES = ["lineorder", "customer", "supplier", "part", "date"]

REGIONS = {
    "AFRICA": ["ALGERIA", "ETHIOPIA", "KENYA", "MOROCCO", "MOZAMBIQUE"],
    "AMERICA": ["ARGENTINA", "BRAZIL", "CANADA", "PERU", "UNITED STATES"],
    "ASIA": ["INDIA", "INDONESIA", "JAPAN", "CHINA", "VIETNAM"],
    "EUROPE": ["FRANCE", "GERMANY", "ROMANIA", "RUSSIA", "UNITED KINGDOM"],
    "MIDDLE EAST": ["EGYPT", "IRAN", "IRAQ", "JORDAN", "SAUDI ARABIA"],
}
NATION_REGION = {n: r for r, ns in REGIONS.items() for n in ns}
# TPC-H nation keys 0..24
NATION_KEYS = ["ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE",
               "GERMANY", "INDIA", "INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA",
               "MOROCCO", "MOZAMBIQUE", "PERU", "CHINA", "ROMANIA", "SAUDI ARABIA",
               "VIETNAM", "RUSSIA", "UNITED KINGDOM", "UNITED STATES"]

# Order dates are uniform over 1992-01-01 .. 1998-08-02 (TPC-H: ENDDATE - 151 days).
FIRST_DAY = datetime.date(1992, 1, 1)
LAST_ORDER_DAY = datetime.date(1998, 8, 2)
N_ORDER_DAYS = (LAST_ORDER_DAY - FIRST_DAY).days + 1  # 2406


def run(*args, **kw):
    return subprocess.run([SSBGEN, *map(str, args)], check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


@pytest.fixture(scope="session")
def ssbgen():
    subprocess.run(["make", "-s", "-C", SSB], check=True)
    assert os.access(SSBGEN, os.X_OK)
    return SSBGEN


@pytest.fixture(scope="session")
def sf001(ssbgen, tmp_path_factory):
    """SF 0.01, every table, as files, and parsed into lists of rows."""
    d = tmp_path_factory.mktemp("sf001")
    run("-s", "0.01", "-o", d)
    rows = {}
    for t in TABLES:
        with open(d / f"{t}.tsv", "rb") as f:
            data = f.read()
        assert data.endswith(b"\n")
        assert b"\\" not in data and b"\r" not in data
        rows[t] = [line.split("\t") for line in data.decode("ascii").splitlines()]
    return d, rows


def sha(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- row counts

def test_row_counts_sf001(sf001):
    _, rows = sf001
    assert len(rows["customer"]) == 300
    assert len(rows["supplier"]) == 20
    assert len(rows["part"]) == 2000          # 200,000 x SF below SF 1
    assert len(rows["date"]) == 2556
    # lineorder: 15,000 orders of 1..7 lines each, every order key present,
    # line numbers 1..n without gaps
    lines_per_order = {}
    for r in rows["lineorder"]:
        ok, ln = int(r[0]), int(r[1])
        assert ln == lines_per_order.get(ok, 0) + 1, (ok, ln)
        lines_per_order[ok] = ln
    assert sorted(lines_per_order) == list(range(1, 15001))
    n = len(rows["lineorder"])
    assert 0.98 * 60000 <= n <= 1.02 * 60000, n
    counts = dict(line.split("\t") for line in
                  run("-s", "0.01", "--count").stdout.decode().splitlines())
    assert {k: int(v) for k, v in counts.items()} == {
        "lineorder": n, "customer": 300, "supplier": 20, "part": 2000, "date": 2556}


@pytest.mark.parametrize("sf,cust,supp,part", [
    ("1", 30000, 2000, 200000),
    ("0.5", 15000, 1000, 100000),
    ("2", 60000, 4000, 400000),
    ("10", 300000, 20000, 800000),      # floor(1 + log2 10) = 4
    ("100", 3000000, 200000, 1400000),  # floor(1 + log2 100) = 7
])
def test_scaled_counts(ssbgen, sf, cust, supp, part):
    out = run("-s", sf, "-T", "customer", "--count").stdout
    assert out == f"customer\t{cust}\n".encode()
    out = run("-s", sf, "-T", "supplier", "--count").stdout
    assert out == f"supplier\t{supp}\n".encode()
    out = run("-s", sf, "-T", "part", "--count").stdout
    assert out == f"part\t{part}\n".encode()


def test_lineorder_count_sf1(ssbgen):
    n = int(run("-s", "1", "-T", "lineorder", "--count").stdout.split()[1])
    assert abs(n - 6000000) < 0.002 * 6000000, n  # 1.5M orders x 4 lines on average


# -------------------------------------------------------------- determinism

def test_deterministic_and_chunk_independent(ssbgen, sf001, tmp_path):
    d, _ = sf001
    for t in TABLES:
        whole = (d / f"{t}.tsv").read_bytes()
        assert run("-s", "0.01", "-T", t).stdout == whole, t   # second run, to stdout
        parts = [run("-s", "0.01", "-T", t, "-C", 3, "-S", k).stdout for k in (1, 2, 3)]
        assert all(parts), t
        assert b"".join(parts) == whole, t
    # -j: forked workers writing chunk files
    run("-s", "0.01", "-o", tmp_path, "-j", 2)
    for t in TABLES:
        joined = (tmp_path / f"{t}.tsv.1").read_bytes() + (tmp_path / f"{t}.tsv.2").read_bytes()
        assert joined == (d / f"{t}.tsv").read_bytes(), t


def test_chunks_never_split_an_order(ssbgen):
    last = None
    for k in range(1, 8):
        out = run("-s", "0.002", "-T", "lineorder", "-C", 7, "-S", k).stdout.decode()
        first_row = out.splitlines()[0].split("\t")
        assert first_row[1] == "1"                    # a chunk starts with line 1
        if last is not None:
            assert int(first_row[0]) == last + 1       # and with the next order
        last = int(out.splitlines()[-1].split("\t")[0])


def test_scale_changes_output(ssbgen):
    a = run("-s", "0.01", "-T", "customer").stdout
    b = run("-s", "0.02", "-T", "customer").stdout
    # customers do not depend on SF: the first 300 of SF 0.02 are SF 0.01's
    assert b.startswith(a) and len(b) > len(a)
    # lineorder's foreign keys do depend on SF (they range over the dimensions)
    assert sha(run("-s", "0.01", "-T", "lineorder").stdout) != \
        sha(run("-s", "0.02", "-T", "lineorder", "-C", 2, "-S", 1).stdout)


@pytest.mark.parametrize("args", [
    ["-s", "0", "-T", "date"], ["-s", "abc", "-T", "date"], ["-s", "-1", "-T", "date"],
    ["-T", "bogus"], ["-T", "lineorder", "-C", "3"], ["-T", "lineorder", "-C", "3", "-S", "4"],
    ["-T", "all"], ["-T", "date", "-j", "2"], ["-T", "date", "extra"],
])
def test_bad_arguments(ssbgen, args):
    p = subprocess.run([SSBGEN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.returncode != 0
    assert p.stdout == b""
    assert p.stderr.startswith(b"ssbgen: ") or b"Usage" in p.stderr


def test_help(ssbgen):
    p = run("--help")
    assert b"-C, --chunks=N" in p.stdout and b"--progress" in p.stdout


# ------------------------------------------------------------ value domains

def retail_cents(partkey):
    """TPC-H part retail price, in cents."""
    return 90000 + (partkey // 10) % 20001 + 100 * (partkey % 1000)


def check_location(city, nation, region):
    assert NATION_REGION[nation] == region
    assert len(city) == 10 and city[:9] == nation[:9].ljust(9) and city[9].isdigit()


def test_dimension_domains(sf001):
    _, rows = sf001
    for t, width in (("customer", 8), ("supplier", 7)):
        prefix = "Customer#" if t == "customer" else "Supplier#"
        for i, r in enumerate(rows[t], 1):
            assert len(r) == width
            assert int(r[0]) == i and r[1] == f"{prefix}{i:09d}"
            assert 10 <= len(r[2]) <= 25
            check_location(r[3], r[4], r[5])
            assert re.fullmatch(r"\d\d-\d{3}-\d{3}-\d{4}", r[6])
            assert int(r[6][:2]) == NATION_KEYS.index(r[4]) + 10   # TPC-H phone prefix
        if t == "customer":
            assert {r[7] for r in rows[t]} == {
                "AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"}
    # with 300 customers every region and almost every nation appears
    assert {r[5] for r in rows["customer"]} == set(REGIONS)
    assert len({r[4] for r in rows["customer"]}) >= 23
    assert len({r[3] for r in rows["customer"]}) > 150

    brands = set()
    for i, r in enumerate(rows["part"], 1):
        assert len(r) == 9 and int(r[0]) == i
        mfgr, cat, brand = r[2], r[3], r[4]
        assert re.fullmatch(r"MFGR#[1-5]", mfgr)
        assert re.fullmatch(r"MFGR#[1-5][1-5]", cat) and cat.startswith(mfgr)
        assert re.fullmatch(r"MFGR#[1-5][1-5]\d\d", brand) and brand.startswith(cat)
        assert 1 <= int(brand[7:]) <= 40
        assert len(r[1]) <= 22 and len(r[1].split(" ")) == 2
        assert 1 <= int(r[7]) <= 50
        assert len(r[6].split(" ")) == 3 and len(r[8].split(" ")) == 2
        brands.add(brand)
    assert len(brands) > 800   # 2,000 parts over 1,000 brands


def test_date_table(sf001):
    _, rows = sf001
    seasons = {12: "Christmas", 1: "Winter", 2: "Winter", 3: "Spring", 4: "Spring",
               5: "Spring", 6: "Summer", 7: "Summer", 8: "Summer"}
    for i, r in enumerate(rows["date"]):
        day = FIRST_DAY + datetime.timedelta(days=i)
        nxt = day + datetime.timedelta(days=1)
        yday = day.timetuple().tm_yday
        sunday_based = (day.weekday() + 1) % 7   # 0 = Sunday
        expect = [
            day.strftime("%Y%m%d"), f"{day:%B} {day.day}, {day.year}", f"{day:%A}",
            f"{day:%B}", str(day.year), f"{day:%Y%m}", f"{day:%b}{day.year}",
            str(sunday_based + 1), str(day.day), str(yday), str(day.month),
            str((yday - 1) // 7 + 1), seasons.get(day.month, "Fall"),
            "t" if sunday_based == 6 else "f",
            "t" if nxt.month != day.month else "f",
            "t" if (day.month, day.day) in {(1, 1), (7, 4), (11, 11), (12, 24), (12, 25), (12, 31)} else "f",
            "t" if day.weekday() < 5 else "f",
        ]
        assert r == expect, (i, r, expect)
    assert rows["date"][-1][0] == "19981230"
    assert {r[4] for r in rows["date"]} == {str(y) for y in range(1992, 1999)}


def test_lineorder_domains_and_foreign_keys(sf001):
    _, rows = sf001
    cust = {int(r[0]) for r in rows["customer"]}
    supp = {int(r[0]) for r in rows["supplier"]}
    part = {int(r[0]) for r in rows["part"]}
    datekeys = {int(r[0]) for r in rows["date"]}
    day_of = {int(r[0]): i for i, r in enumerate(rows["date"])}
    seen = {k: set() for k in ("qty", "disc", "tax", "prio", "mode", "cust", "supp", "date")}
    totals = {}
    for r in rows["lineorder"]:
        assert len(r) == 17
        ok, ln, ck, pk, sk, od = (int(x) for x in r[:6])
        qty, ext, total, disc, rev, cost, tax, cd = (int(x) for x in r[8:16])
        assert 1 <= ln <= 7
        assert ck in cust and pk in part and sk in supp
        assert od in datekeys and cd in datekeys
        assert od <= 19980802
        assert 30 <= day_of[cd] - day_of[od] <= 90
        assert 1 <= qty <= 50 and 0 <= disc <= 10 and 0 <= tax <= 8
        assert r[6] in {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
        assert r[7] == "0"
        assert r[16] in {"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"}
        assert ext == qty * retail_cents(pk)
        assert rev == ext * (100 - disc) // 100
        assert cost == 6 * retail_cents(pk) // 10
        t = totals.setdefault(ok, [total, 0])
        assert t[0] == total                      # one total per order
        t[1] += ext * (100 + tax) * (100 - disc) // 10000
        for k, v in (("qty", qty), ("disc", disc), ("tax", tax), ("prio", r[6]),
                     ("mode", r[16]), ("cust", ck), ("supp", sk), ("date", od)):
            seen[k].add(v)
    assert all(t == s for t, s in totals.values())
    # every value of the small domains occurs; keys spread over their tables
    assert seen["qty"] == set(range(1, 51))
    assert seen["disc"] == set(range(0, 11))
    assert seen["tax"] == set(range(0, 9))
    assert len(seen["prio"]) == 5 and len(seen["mode"]) == 7
    assert seen["supp"] == supp
    assert len(seen["cust"]) > 0.99 * len(cust)
    assert min(seen["date"]) == 19920101 and max(seen["date"]) == 19980802
    assert len(seen["date"]) > 2300


# --------------------------------------------------------- query selectivity

# Each query's filters, split by table, and its selectivity in the SSB
# specification.  "lo" is the probability of the lineorder-local filters given
# uniform quantity 1..50 and discount 0..10.
QUERIES = {
    "q1.1": dict(date="d_year = 1993", lo=3 / 11 * 24 / 50, spec=0.019),
    "q1.2": dict(date="d_yearmonthnum = 199401", lo=3 / 11 * 10 / 50, spec=0.00065),
    "q1.3": dict(date="d_weeknuminyear = 6 AND d_year = 1994", lo=3 / 11 * 10 / 50,
                 spec=1 / 364 * 3 / 11 * 10 / 50),
    "q2.1": dict(part="p_category = 'MFGR#12'", supplier="s_region = 'AMERICA'",
                 spec=1 / 125),
    "q2.2": dict(part="p_brand1 BETWEEN 'MFGR#2221' AND 'MFGR#2228'",
                 supplier="s_region = 'ASIA'", spec=1 / 625),
    "q2.3": dict(part="p_brand1 = 'MFGR#2239'", supplier="s_region = 'EUROPE'",
                 spec=1 / 5000),
    "q3.1": dict(customer="c_region = 'ASIA'", supplier="s_region = 'ASIA'",
                 date="d_year BETWEEN 1992 AND 1997", spec=0.034),
    "q3.2": dict(customer="c_nation = 'UNITED STATES'", supplier="s_nation = 'UNITED STATES'",
                 date="d_year BETWEEN 1992 AND 1997", spec=0.0014),
    "q3.3": dict(customer="c_city IN ('UNITED KI1', 'UNITED KI5')",
                 supplier="s_city IN ('UNITED KI1', 'UNITED KI5')",
                 date="d_year BETWEEN 1992 AND 1997", spec=0.000055),
    "q3.4": dict(customer="c_city IN ('UNITED KI1', 'UNITED KI5')",
                 supplier="s_city IN ('UNITED KI1', 'UNITED KI5')",
                 date="d_yearmonth = 'Dec1997'", spec=0.00000076),
    "q4.1": dict(customer="c_region = 'AMERICA'", supplier="s_region = 'AMERICA'",
                 part="p_mfgr IN ('MFGR#1', 'MFGR#2')", spec=0.016),
    "q4.2": dict(customer="c_region = 'AMERICA'", supplier="s_region = 'AMERICA'",
                 part="p_mfgr IN ('MFGR#1', 'MFGR#2')", date="d_year IN (1997, 1998)",
                 spec=0.0046),
    "q4.3": dict(customer="c_region = 'AMERICA'", supplier="s_nation = 'UNITED STATES'",
                 part="p_category = 'MFGR#14'", date="d_year IN (1997, 1998)",
                 spec=0.000091),
}


@pytest.fixture(scope="session")
def duck(ssbgen, tmp_path_factory):
    """SF 0.1 loaded into DuckDB with bench/ssb/schema.sql's DDL."""
    duckdb = pytest.importorskip("duckdb")
    d = tmp_path_factory.mktemp("sf01")
    run("-s", "0.1", "-o", d, "-j", 2)
    con = duckdb.connect()
    with open(os.path.join(SSB, "schema.sql")) as f:
        # DuckDB takes the CREATE TABLEs as they are; not PostgreSQL's SET or
        # the DROP of several tables at once
        ddl = re.sub(r"(?m)^(SET|DROP TABLE) .*$", "", f.read())
    con.execute(ddl)
    for table, name in (("lineorder", "lineorder"), ("customer", "customer"),
                        ("supplier", "supplier"), ("part", "part"), ("date1", "date")):
        for k in (1, 2):
            con.execute(f"COPY {table} FROM '{d}/{name}.tsv.{k}' "
                        "(FORMAT csv, DELIMITER '\t', HEADER false, QUOTE '')")
    return con


def scalar(con, sql):
    return con.execute(sql).fetchone()[0]


def test_q11_selectivity_sf001(sf001):
    """Q1.1 selects d_year = 1993 (365 of 2,406 order days), discount 1..3 (3 of
    11 values) and quantity < 25 (24 of 50): 0.0199 of lineorder (the
    specification, with 1/7 for the year and 0.5 for quantity, says 0.019)."""
    _, rows = sf001
    year = {r[0]: r[4] for r in rows["date"]}
    hit = sum(1 for r in rows["lineorder"]
              if year[r[5]] == "1993" and 1 <= int(r[11]) <= 3 and int(r[8]) < 25)
    frac = hit / len(rows["lineorder"])
    assert 0.018 <= frac <= 0.0218, frac
    assert 0.85 * 0.019 <= frac <= 1.15 * 0.019, frac


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_query_selectivity_sf01(duck, name):
    """Counts the rows each query file's WHERE clause selects at SF 0.1 and
    compares them (a) with the count that uniform, independent foreign keys
    predict from the dimension tables actually generated, and (b) with the
    specification's selectivity, within a factor that allows for SF 0.1's
    small dimension tables and for order dates ending in August 1998."""
    q = QUERIES[name]
    with open(os.path.join(SSB, "queries", f"{name}.sql")) as f:
        sql = f.read()
    rows = duck.execute(sql).fetchall()          # the query itself runs
    body = re.sub(r"--[^\n]*", "", sql)
    m = re.search(r"\bFROM\b(.*?)(\bGROUP BY\b|;)", body, re.S | re.I)
    observed = scalar(duck, f"SELECT count(*) FROM {m.group(1)}")
    n = scalar(duck, "SELECT count(*) FROM lineorder")
    if observed:
        assert rows
    assert rows or observed == 0

    expect = n * q.get("lo", 1.0)
    for table in ("customer", "supplier", "part"):
        if table in q:
            expect *= scalar(duck, f"SELECT avg(({q[table]})::int) FROM {table}")
    if "date" in q:
        expect *= scalar(duck, f"SELECT count(*) FROM date1 WHERE d_datekey <= 19980802 "
                               f"AND {q['date']}") / N_ORDER_DAYS
    # lines of an order share customer and date: up to ~5x the variance of
    # independent rows, hence 4 * sqrt(5 * expect)
    tol = 4 * math.sqrt(5 * expect) + 2
    assert abs(observed - expect) <= tol, (observed, expect, tol)

    spec_rows = q["spec"] * n
    if spec_rows >= 300:
        assert 0.6 * spec_rows <= observed <= 1.6 * spec_rows, (observed, spec_rows)
    elif spec_rows >= 50:
        assert 0.25 * spec_rows <= observed <= 4 * spec_rows, (observed, spec_rows)
