"""Hatchling build hook: compiles stackmark's accelerator into the wheel (see
`build_native.py`). A regular wheel gets the modules as platform-specific files;
an editable install gets them compiled in place, next to their sources. Without a
C compiler the wheel is the pure-Python package, and one line says so."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _build_native(root: str) -> Any:
    spec = importlib.util.spec_from_file_location("build_native", Path(root) / "build_native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class NativeBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        native = _build_native(self.root)
        if version == "editable":
            native.clean()
            outcome = native.build(native.NATIVE)
        else:
            self._tmp = tempfile.TemporaryDirectory(prefix="stackmark-native-")
            outcome = native.build(Path(self._tmp.name))
            if not isinstance(outcome, str):
                for made in outcome:
                    build_data["force_include"][str(made)] = f"stackmark/_native/{made.name}"
        if isinstance(outcome, str):
            print(native.NOTICE.format(reason=outcome), file=sys.stderr)
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()
