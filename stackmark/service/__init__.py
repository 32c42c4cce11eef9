"""`stackmark serve`: the symbolication service (a front end over the core).

    settings.py   what the service is told (JSON, handed to each worker process)
    worker.py     per-process state: the symbolizer, lookups in the background
    symbolication_v5.py  Mozilla's Symbolication API v5: requests checked, frames answered
    app.py        the Starlette application: routes, limits, authentication
    metrics.py    Prometheus counters shared by the worker processes

Starlette and uvicorn are imported here only (the `serve` extra); the
core never imports them.
"""
