"""stackmark.batch on its own: planning, the pre-scan, and a real process pool
whose workers crash, raise or finish out of order."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from stackmark import batch


def upper_case_processor() -> batch.FileProcessor:
    """Copies its input in capitals; `crash` kills the worker, `raise` raises,
    `slow` finishes late (so results arrive out of order)."""

    def process(
        name: str, source: BinaryIO, output: BinaryIO, err_write: Callable[[str], None]
    ) -> int:
        data = source.read()
        if b"crash" in data:
            os._exit(3)  # a worker dying as the OOM killer would leave it
        if b"raise" in data:
            raise RuntimeError("processor bug")
        if b"slow" in data:
            time.sleep(0.5)
        err_write(f"{name}: {len(data)} bytes\n")
        output.write(data.upper())
        return 1 if b"warn" in data else 0

    return process


def make_inputs(root: Path, texts: list[str]) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, text in enumerate(texts):
        path = root / f"{i:02d}.log"
        path.write_text(text)
        paths.append(path)
    return paths


def run_batch(items: list[batch.BatchItem], tmp: Path, jobs: int) -> list[batch.ItemResult]:
    seen: list[int] = []
    results = batch.run(
        items,
        upper_case_processor,
        jobs=jobs,
        temp_dir=tmp,
        on_result=lambda r: seen.append(r.item.index),
    )
    assert seen == [item.index for item in items]  # delivered in input order
    return results


def test_pool_survives_a_crashing_worker(tmp_path: Path) -> None:
    texts = ["slow first\n", "fine\n", "crash here\n", "warn\n", "raise please\n", "last\n"]
    make_inputs(tmp_path / "in", texts)
    items, unusable = batch.plan([str(tmp_path / "in")], tmp_path / "out")
    assert unusable == []
    results = run_batch(items, tmp_path, jobs=2)
    by_name = {Path(r.item.name).name: r for r in results}
    assert by_name["02.log"].failure == "the worker process died on this file"
    assert by_name["04.log"].failure == "internal error: RuntimeError: processor bug"
    assert by_name["03.log"].status == 1 and by_name["03.log"].failure is None
    for name, text in (("00.log", texts[0]), ("01.log", texts[1]), ("05.log", texts[5])):
        assert by_name[name].failure is None
        assert (tmp_path / "out" / name).read_text() == text.upper()
        assert by_name[name].diagnostics == f"{tmp_path / 'in' / name}: {len(text)} bytes\n"
    assert not (tmp_path / "out" / "02.log").exists()
    assert not list((tmp_path / "out").glob(".*"))  # no partial outputs


def test_in_process_when_one_job(tmp_path: Path) -> None:
    make_inputs(tmp_path / "in", ["a\n", "raise\n"])
    items, _ = batch.plan([str(tmp_path / "in")], None)
    results = run_batch(items, tmp_path, jobs=1)
    assert results[0].output is not None and results[0].output.read_text() == "A\n"
    assert results[1].failure == "internal error: RuntimeError: processor bug"


def test_plan(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    make_inputs(logs / "deep", ["x\n"])
    (logs / ".hidden").write_text("skip me\n")
    (logs / ".git").mkdir()
    (logs / ".git" / "HEAD").write_text("skip me too\n")
    (logs / "out").mkdir()
    (logs / "out" / "old.log").write_text("an output of a previous run\n")
    single = tmp_path / "single.log"
    single.write_text("y\n")
    items, unusable = batch.plan([str(logs), str(single), str(tmp_path / "gone")], logs / "out")
    assert [(i.name, i.output) for i in items] == [
        (str(logs / "deep" / "00.log"), logs / "out" / "deep" / "00.log"),
        (str(single), logs / "out" / "single.log"),
    ]
    assert [(r.item.name, r.failure) for r in unusable] == [
        (str(tmp_path / "gone"), "no such file or directory")
    ]


def test_scan_build_ids(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_bytes(
        b"x {{{module:0:libc.so.6:elf:ABCDEF0123}}} {{{module:1:a:elf:abcdef0123}}}\n"
        b"\x1b[1m{{{module:2:b:elf:0011}}}\x1b[0m\n"
        b"{{{module:3:bad:elf:../../etc}}} {{{module:4:odd:elf:abc}}} {{{mmap:0:1:load:0:r:0}}}\n"
        b"\xff\xfe not utf-8 {{{module:5:c:elf:77}}}\n"
    )
    assert batch.scan_build_ids(log) == {"abcdef0123", "0011", "77"}
    assert batch.scan_build_ids(tmp_path / "missing") == set()
