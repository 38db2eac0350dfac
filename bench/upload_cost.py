"""What an upload costs as its XML attributes grow, and what it does to other requests.

The curve: the upload check (`RobloxModelCodec.check`, what `POST /v1/packages/versions`
runs before storing) over files of 1,000 to 4,000,000 attributes in two shapes, each case in
a fresh process so its peak RSS is its own: "one item" puts them all on one `<Item>` (the
audit's file), "spread" puts 14 on each of many `<Item>`s (a legal file, which is read
whole). The baseline, measured in the same process: expat over the same bytes with no
handlers, in one call.

The neighbours: a real `licore serve` (one worker, SQLite) answers `GET /v1/products` in a
loop from one client while another uploads each file; the p50, p99 and worst of those
answers, beside the same loop with no upload running.

Run from the repository root: `.venv/bin/python -m bench.upload_cost [--counts 1000 4000000]
[--skip-server]`.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import xml.parsers.expat
from pathlib import Path

import httpx
from tests.http.e2e import auth, owner_key, setup_people
from tests.support.server import running_server

from adapters_formats.codec import RobloxModelCodec
from licore.builds.errors import ModelFormatError

COUNTS = (1_000, 10_000, 100_000, 1_000_000, 4_000_000)
SHAPES = ("one-item", "spread")
PER_ITEM = 14  # with class and referent, the 16 attributes an element may have
MIB = 1024 * 1024


def model(shape: str, attributes: int) -> bytes:
    """A model of `attributes` attributes beyond each item's class and referent."""
    if shape == "one-item":
        extra = b"".join(b' a%d="x"' % i for i in range(attributes))
        return (b'<roblox version="4"><Item class="Folder" referent="RBX0"' + extra
                + b'><Properties><string name="Name">F</string></Properties></Item></roblox>')
    row = b"".join(b' a%d="x"' % i for i in range(PER_ITEM))
    items = -(-attributes // PER_ITEM)
    return (b'<roblox version="4">' + b"".join(
        b'<Item class="Folder" referent="RBX%d"%s><Properties><string name="Name">F</string>'
        b"</Properties></Item>" % (i, row) for i in range(items)) + b"</roblox>")


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_case(shape: str, attributes: int) -> dict[str, object]:
    """In this process: the check's time and peak RSS growth, and the baseline's time."""
    data = model(shape, attributes)
    start = time.perf_counter()
    xml.parsers.expat.ParserCreate().Parse(data, True)
    floor = time.perf_counter() - start
    before = _rss_mib()
    start = time.perf_counter()
    try:
        RobloxModelCodec().check(data)
        outcome = "read"
    except ModelFormatError as refused:
        outcome = f"refused: {refused.reason}"
    took = time.perf_counter() - start
    return {"shape": shape, "attributes": attributes, "mib": len(data) / MIB,
            "seconds": took, "floor": floor, "rss_growth_mib": _rss_mib() - before,
            "outcome": outcome}


def curve(counts: list[int]) -> None:
    print(f"{'shape':9} {'attributes':>10} {'MiB':>6} {'check s':>8} {'expat s':>8} "
          f"{'ratio':>6} {'peak RSS +MiB':>13}  outcome")
    for shape in SHAPES:
        for n in counts:
            out = subprocess.run([sys.executable, "-m", "bench.upload_cost", "--one", shape,
                                  str(n)], check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            ratio = r["seconds"] / max(r["floor"], 1e-6)
            print(f"{shape:9} {n:>10,} {r['mib']:6.1f} {r['seconds']:8.3f} {r['floor']:8.3f} "
                  f"{ratio:6.1f} {r['rss_growth_mib']:13.0f}  {str(r['outcome'])[:70]}")


def _probe(url: str, key: str, stop: threading.Event) -> list[float]:
    times = []
    with httpx.Client(headers=auth(key), timeout=120) as client:
        while not stop.is_set():
            start = time.perf_counter()
            client.get(f"{url}/v1/products").raise_for_status()
            times.append(time.perf_counter() - start)
    return times


def _summary(times: list[float]) -> str:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (f"{len(times):5} requests  p50 {statistics.median(times) * 1000:7.1f} ms  "
            f"p99 {p99 * 1000:7.1f} ms  worst {ordered[-1] * 1000:7.1f} ms")


def _probed(url: str, key: str, during: float | None, work: object = None) -> str:
    stop, out = threading.Event(), []
    thread = threading.Thread(target=lambda: out.extend(_probe(url, key, stop)))
    thread.start()
    try:
        if during is not None:
            time.sleep(during)
            result = ""
        else:
            assert callable(work)
            result = str(work())
    finally:
        stop.set()
        thread.join()
    return f"{_summary(out)}  {result}"


def neighbours(counts: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp, running_server(
            f"sqlite:///{Path(tmp) / 'bench.db'}", LICORE_PARTNER_RATE_LIMIT="1000000",
            LICORE_MAX_UPLOAD_BYTES=str(64 * MIB)) as server:
        people = setup_people(server.database_url, "1")
        key = owner_key(server, people, "products:read products:write packages:write")
        product = httpx.post(f"{server.url}/v1/products", headers=auth(key),
                             json={"title": "Bench"}).json()["id"]
        print(f"\nGET /v1/products on the same worker (one worker, SQLite)\n"
              f"{'quiet, 5 s':28} {_probed(server.url, key, 5.0)}")
        for shape in SHAPES:
            for n in counts:
                data = model(shape, n)

                def upload(label: str = f"{shape}-{n}", data: bytes = data) -> str:
                    start = time.perf_counter()
                    r = httpx.post(f"{server.url}/v1/packages/versions", headers=auth(key),
                                   params={"product_id": product, "version": label},
                                   content=data, timeout=600)
                    return f"upload {r.status_code} in {time.perf_counter() - start:.2f} s"

                print(f"{shape + ' ' + format(n, ','):28} {_probed(server.url, key, None, upload)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", type=int, nargs="+", default=list(COUNTS))
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_case(args.one[0], int(args.one[1]))))
        return
    curve(args.counts)
    if not args.skip_server:
        neighbours(args.counts)


if __name__ == "__main__":
    main()
