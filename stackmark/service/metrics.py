"""Prometheus metrics of the service, summed over its worker processes.

prometheus_client's multiprocess mode: each worker writes its counters to
memory-mapped files in `PROMETHEUS_MULTIPROC_DIR` (a directory under the
cache, emptied by `stackmark serve` at start), and `/metrics`, whichever
worker answers it, adds up every worker's files. The variable must be set
before prometheus_client is imported: `stackmark serve` sets it, and
worker processes inherit it.

    stackmark_requests_total{endpoint, status}     requests answered
    stackmark_request_seconds{endpoint}            latency histogram
    stackmark_module_lookups_total{result}         hit: module already open in the
                                                   worker; miss: looked up (found or not)
    stackmark_partial_answers_total{endpoint}      answers cut short by the deadline
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, multiprocess

__all__ = ["CONTENT_TYPE", "LATENCY", "LOOKUPS", "PARTIAL", "REQUESTS", "render"]

REQUESTS = Counter(
    "stackmark_requests", "Requests answered, by endpoint and HTTP status", ["endpoint", "status"]
)
LATENCY = Histogram(
    "stackmark_request_seconds",
    "Time from request to answer",
    ["endpoint"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
LOOKUPS = Counter(
    "stackmark_module_lookups",
    "Modules a request needed: open in the worker already (hit) or not (miss)",
    ["result"],
)
PARTIAL = Counter(
    "stackmark_partial_answers", "Answers cut short by the request deadline", ["endpoint"]
)


def render() -> bytes:
    """Every worker's metrics, in the Prometheus text format."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return generate_latest(registry)
