#!/usr/bin/env python3
"""Legitimate HTTPS-over-TCP load for the SYN-flood benchmark: open-loop arrivals at --rate
per second, each a new TCP connection + TLS handshake + GET /bytes/N; a request succeeds when
the whole body arrives within --timeout seconds. Prints one JSON line: counts and latency
percentiles (connect to last byte, successes only). Test tool: the certificate is not
verified.

  python3 -m server_testbed.tcp.https_probe --server 198.18.230.10 --port 443 --rate 50 \
      --requests 150 --size 1000        (from the repository's root)
"""
import argparse
import asyncio
import json
import ssl
import time

from qs_support.stats import percentile as _percentile


def percentile(values, p):
    return _percentile(values, p, empty=-1.0)


async def one(host, port, size, timeout, ctx, results):
    t0 = time.monotonic()
    writer = None
    try:
        async def fetch():
            nonlocal writer
            reader, writer = await asyncio.open_connection(host, port, ssl=ctx,
                                                           server_hostname="localhost")
            writer.write(f"GET /bytes/{size} HTTP/1.1\r\nhost: localhost\r\n\r\n".encode())
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(head.split(b"\r\n")[0].decode(errors="replace"))
            await reader.readexactly(size)
        await asyncio.wait_for(fetch(), timeout)
        results.append((True, (time.monotonic() - t0) * 1000, ""))
    except Exception as e:  # noqa: BLE001 - every failure is a failed request
        results.append((False, (time.monotonic() - t0) * 1000, type(e).__name__))
    finally:
        if writer is not None:
            writer.close()


async def run(args):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    results, tasks = [], []
    start = time.monotonic()
    for i in range(args.requests):
        delay = start + i / args.rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(args.server, args.port, args.size, args.timeout,
                                             ctx, results)))
    await asyncio.gather(*tasks)
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", required=True)
    p.add_argument("--port", type=int, default=443)
    p.add_argument("--rate", type=float, default=50)
    p.add_argument("--requests", type=int, default=150)
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--timeout", type=float, default=3.0)
    args = p.parse_args()
    results = asyncio.run(run(args))
    ok = [ms for success, ms, _ in results if success]
    errors = {}
    for success, _, err in results:
        if not success:
            errors[err] = errors.get(err, 0) + 1
    print(json.dumps({"requests": len(results), "succeeded": len(ok),
                      "failed": len(results) - len(ok), "errors": errors,
                      "latency_ms_p50": percentile(ok, 0.5), "latency_ms_p99": percentile(ok, 0.99),
                      "latency_ms_p999": percentile(ok, 0.999)}))


if __name__ == "__main__":
    main()
