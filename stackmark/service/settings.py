"""What a `stackmark serve` worker is told, as one JSON document.

uvicorn starts each worker process by importing the application factory;
the parent hands the settings over in the environment variable
`STACKMARK_SERVE_SETTINGS`, so every worker builds the same symbolizer.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

from stackmark.errors import StackmarkError

ENVIRONMENT_VARIABLE = "STACKMARK_SERVE_SETTINGS"


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """Sources (as `stackmark symbolize` takes them), naming, limits and access.

    `symbols` is a `SymbolSettings.to_dict()`; `names` the keyword arguments
    of `NameOptions`; `debuginfod_urls` None means DEBUGINFOD_URLS."""

    symbols: dict[str, object]
    names: dict[str, object]
    breakpad_stores: list[str] = field(default_factory=list)
    debuginfod_urls: list[str] | None = None
    no_debuginfod: bool = False
    offline: bool = False
    debuginfod_timeout: float | None = None
    debuginfod_cache: str | None = None
    cache_dir: str = ""
    token_file: str | None = None
    max_body_bytes: int = 4 << 20
    max_jobs: int = 10
    max_modules: int = 1000
    max_frames: int = 20000
    deadline_seconds: float = 10.0
    lookup_threads: int = 4

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_environment(cls) -> ServiceSettings:
        text = os.environ.get(ENVIRONMENT_VARIABLE)
        if not text:
            raise StackmarkError(f"{ENVIRONMENT_VARIABLE} is not set: start with `stackmark serve`")
        return cls(**json.loads(text))
