"""`memdir links ID --depth N` (issue 30, item 9: a graph query of depth N): the memories
within N typed links of one, both ways, breadth first; a forgotten memory is neither listed nor
walked through, a private one masked (its row in the policy, tests/test_policy.py)."""

from __future__ import annotations

import json

from conftest import memdir_main

from memdir.archive_format.memdir import Memdir

LATER = "2026-05-02T09:00:00Z"


def run(memdir: Memdir, *args: str) -> str:
    done = memdir_main("--dir", str(memdir.root), *args, now=LATER)
    assert done.code == 0, done
    return done.out.strip()


def test_links_walks_n_hops_both_ways_and_not_through_a_forgotten_memory(hashed: Memdir) -> None:
    a, b, c, d, e = (run(hashed, "teach", f"Allotment note number {n}") for n in range(5))
    run(hashed, "link", a, b, "--type", "supports")  # a → b
    run(hashed, "link", c, b)  # c → b: reached from a only through b, against its direction
    run(hashed, "link", c, d)  # d: three hops from a
    run(hashed, "link", a, e)
    data = json.loads(run(hashed, "links", a, "--depth", "2", "--json"))
    depths = {node["id"]: node["depth"] for node in data["memories"]}
    assert depths == {a: 0, b: 1, e: 1, c: 2}
    edges = {(edge["from"], edge["to"], edge["type"]) for edge in data["links"]}
    assert edges == {(a, b, "supports"), (c, b, "related"), (a, e, "related")}
    deeper = json.loads(run(hashed, "links", a, "--depth", "3", "--json"))
    assert {node["id"] for node in deeper["memories"]} == {a, b, c, d, e}
    run(hashed, "forget", b)
    after = json.loads(run(hashed, "links", a, "--depth", "3", "--json"))
    assert {node["id"] for node in after["memories"]} == {a, e}  # c and d only lay beyond b


def test_links_masks_a_private_neighbour_and_refuses_a_bad_depth(hashed: Memdir) -> None:
    a = run(hashed, "teach", "I keep bees behind the shed")
    secret = run(hashed, "teach", "The hive key is under the blue pot", "--visibility", "private")
    run(hashed, "link", a, secret)
    text = run(hashed, "links", a)
    assert secret in text and "[private]" in text and "blue pot" not in text
    for depth in ("0", "6"):
        done = memdir_main("--dir", str(hashed.root), "links", a, "--depth", depth, now=LATER)
        assert done.code == 8 and "Traceback" not in done.err
        assert done.err.startswith("memdir: error: --depth must be 1 to 5")
    missing = memdir_main("--dir", str(hashed.root), "links", "m-0000", now=LATER)
    assert missing.code != 0 and "Traceback" not in missing.err
