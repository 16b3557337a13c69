"""Ways to spell "some list member is one of these" on Milvus 2.3, side by side.

Milvus 2.3.5 has no scalar index for ARRAY fields, so ``array_contains_any`` reads every row's
list. This script writes one collection of ``--chunks`` rows (384-d unit vectors, FLAT/COSINE;
a regions list of 1-3 of six values, a plan, one of 20 categories, as in
``bench/milvus_vs_faiss.py``) holding the same list several ways, and times the same selection
spelled on each:

* ``array_contains_any`` on the ARRAY<VARCHAR> field (the typed layout without member flags);
* ``array_contains`` per value, ORed;
* the same two as the typed layout writes them, next to the test of a list's single-string
  facet (a VARCHAR with a Trie index, empty for these rows);
* one INT8 field per vocabulary value with a sort index (``milvus.layout``'s member flags),
  tested with ``== 1`` and with ``in [1]``;
* one INT64 bit set of the members with a sort index, tested with ``in`` on the bit sets that
  contain a wanted value (those present in the data, and all of them);
* a bitwise AND and a modulo test on that bit set (Milvus 2.3 refuses both; printed as errors).

Printed: the ``count(*)`` of each expression (the filter alone, median of 30) and filtered search
p50/p95 (k=10) over ``--queries`` queries, the expressions interleaved with their order rotating
from query to query, and whether each returns the same ten ids as ``array_contains_any``.

Usage: ``python bench/milvus_list_filters.py --chunks 100000 --queries 300`` (starts a loopback
server in a temporary directory and stops it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from pymilvus import DataType, MilvusClient, MilvusException

sys.path.insert(0, str(Path(__file__).resolve().parent))

from milvus_vs_faiss import milvus_server  # noqa: E402

DIMENSION = 384
K = 10
COUNT_REPEATS = 30
BATCH = 5_000
REGIONS = ("eu", "us", "uk", "apac", "latam", "africa")
PLANS = ("basic", "premium", "business")
WANTED = ("uk", "apac")
BIT = {region: 1 << position for position, region in enumerate(REGIONS)}
COLLECTION = "list_filters"
EQUIVALENT = {
    "array_contains_any (ARRAY, no index)",
    "array_contains ORed",
    "INT8 flag per value == 1 (STL_SORT)",
    "INT8 flag per value in [1]",
    "as the store writes it, without flags",
    "as the store writes it, with flags",
}
"""The spellings of the same selection (and the INT64 bit set tests)."""


def expressions(bitsets_present: list[int]) -> dict[str, str]:
    wanted = BIT["uk"] | BIT["apac"]
    present = [bits for bits in bitsets_present if bits & wanted]
    every = [bits for bits in range(1 << len(REGIONS)) if bits & wanted]
    return {
        "none": "",
        "plan, VARCHAR Trie (reference, 1/3)": 'plan in ["premium"]',
        "array_contains_any (ARRAY, no index)": 'array_contains_any(regions, ["uk", "apac"])',
        "array_contains ORed": '(array_contains(regions, "uk") or array_contains(regions, "apac"))',
        "INT8 flag per value == 1 (STL_SORT)": "(r_uk == 1 or r_apac == 1)",
        "INT8 flag per value in [1]": "(r_uk in [1] or r_apac in [1])",
        f"INT64 bit set in {len(present)} present sets": f"bits in {present}",
        f"INT64 bit set in all {len(every)} sets": f"bits in {every}",
        "as the store writes it, without flags": (
            '((regions_s in ["apac", "uk"]) or array_contains_any(regions, ["apac", "uk"]))'
        ),
        "as the store writes it, with flags": (
            '((regions_s in ["apac", "uk"]) or (r_apac == 1) or (r_uk == 1))'
        ),
        "INT64 bit set, bitwise and": f"(bits & {wanted}) != 0",
        "INT64 bit set, modulo": "(bits % 16 >= 8)",
        "selective: category + array_contains_any": (
            '(category in ["category-07"] and array_contains_any(regions, ["africa"]))'
        ),
        "selective: category + INT8 flag": '(category in ["category-07"] and r_africa == 1)',
        "negated: not array_contains_any": 'not array_contains_any(regions, ["uk", "apac"])',
        "negated: not INT8 flags": "not (r_uk == 1 or r_apac == 1)",
    }


def fill(client: MilvusClient, count: int, rng: np.random.Generator) -> list[int]:
    """Write the collection, flush and index it; the bit sets of its rows."""
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("plan", DataType.VARCHAR, max_length=64)
    schema.add_field("category", DataType.VARCHAR, max_length=64)
    schema.add_field(
        "regions", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=128, max_length=256
    )
    schema.add_field("regions_s", DataType.VARCHAR, max_length=1024)
    schema.add_field("bits", DataType.INT64)
    for region in REGIONS:
        schema.add_field(f"r_{region}", DataType.INT8)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=DIMENSION)
    client.create_collection(COLLECTION, schema=schema, consistency_level="Session")
    bitsets = []
    for start in range(0, count, BATCH):
        size = min(BATCH, count - start)
        vectors = rng.normal(size=(size, DIMENSION)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = []
        for offset, vector in enumerate(vectors):
            regions = sorted(rng.choice(REGIONS, size=int(rng.integers(1, 4)), replace=False))
            bits = sum(BIT[region] for region in regions)
            bitsets.append(bits)
            row = {
                "id": start + offset,
                "plan": PLANS[int(rng.integers(len(PLANS)))],
                "category": f"category-{int(rng.integers(20)):02d}",
                "regions": [str(region) for region in regions],
                "regions_s": "",
                "bits": bits,
                "embedding": vector.tolist(),
            }
            row.update({f"r_{region}": int(region in regions) for region in REGIONS})
            rows.append(row)
        client.insert(COLLECTION, rows)
    client.flush(COLLECTION)
    index_params = client.prepare_index_params()
    index_params.add_index("embedding", index_type="FLAT", metric_type="COSINE")
    index_params.add_index("plan", index_type="Trie")
    index_params.add_index("category", index_type="Trie")
    index_params.add_index("regions_s", index_type="Trie")
    index_params.add_index("bits", index_type="STL_SORT")
    for region in REGIONS:
        index_params.add_index(f"r_{region}", index_type="STL_SORT")
    client.create_index(COLLECTION, index_params)
    client.load_collection(COLLECTION)
    return bitsets


def count_ms(client: MilvusClient, expression: str) -> tuple[int, float]:
    samples = []
    count = 0
    for _ in range(COUNT_REPEATS):
        started = time.perf_counter()
        rows = client.query(COLLECTION, filter=expression or "id >= 0", output_fields=["count(*)"])
        samples.append(time.perf_counter() - started)
        count = int(rows[0]["count(*)"])
    return count, float(np.median(samples)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    with milvus_server(None) as uri:
        client = MilvusClient(uri)
        bitsets = fill(client, args.chunks, rng)
        print(f"# List filters on Milvus 2.3, {args.chunks:,} rows, {DIMENSION}-d FLAT, k={K}\n")
        print(f"Load average at the start: {os.getloadavg()} ({os.cpu_count()} CPUs)\n")
        print("| expression | matching | count(*) p50 ms |\n|---|---:|---:|")
        usable = {}
        for name, expression in expressions(sorted(set(bitsets))).items():
            try:
                matching, median = count_ms(client, expression)
            except MilvusException as error:
                print(f"| {name} | refused: {error.message[:90]} | |")
                continue
            usable[name] = expression
            print(f"| {name} | {matching:,} | {median:.2f} |")
        search_table(client, usable, rng, args.queries)
        print(f"\nLoad average at the end: {os.getloadavg()}")
        client.close()


def search_table(
    client: MilvusClient, usable: dict[str, str], rng: np.random.Generator, count: int
) -> None:
    queries = rng.normal(size=(count, DIMENSION)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    names = list(usable)
    times: dict[str, list[float]] = {name: [] for name in names}
    found: dict[str, list[list[int]]] = {name: [] for name in names}
    for number, query in enumerate(queries):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            hits = client.search(
                COLLECTION, [query.tolist()], filter=usable[name], limit=K, output_fields=["id"]
            )
            times[name].append(time.perf_counter() - started)
            found[name].append([hit["id"] for hit in hits[0]])
    reference = found["array_contains_any (ARRAY, no index)"]
    print("\n| expression | search p50 ms | p95 ms | same ten as array_contains_any |")
    print("|---|---:|---:|---:|")
    for name in names:
        p50, p95 = np.percentile(np.array(times[name]) * 1000, [50, 95])
        same = np.mean([a == b for a, b in zip(found[name], reference, strict=True)])
        shown = f"{same:.2f}" if name in EQUIVALENT or name.startswith("INT64") else "n/a"
        print(f"| {name} | {p50:.1f} | {p95:.1f} | {shown} |")


if __name__ == "__main__":
    main()
