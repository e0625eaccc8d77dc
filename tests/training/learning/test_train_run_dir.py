"""Run directories: runs started at the same moment never share one; saves are never half-written."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import BinaryIO

import pytest

from training.learning.run_dir import create_run_dir, save_model


def test_create_run_dir__concurrent_runs_get_distinct_directories(tmp_path: Path) -> None:
    """16 threads creating 25 run directories each from one stem (released together) get 400 distinct ones."""
    threads, per_thread = 16, 25
    barrier = threading.Barrier(threads)
    created: list[list[Path]] = [[] for _ in range(threads)]

    def work(index: int) -> None:
        barrier.wait()
        created[index].extend(create_run_dir(tmp_path, "scenario__algo__0__20250101-000000") for _ in range(per_thread))

    workers = [threading.Thread(target=work, args=(index,)) for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    paths = [path for batch in created for path in batch]
    assert len(set(paths)) == len(paths) == threads * per_thread
    assert sorted(tmp_path.iterdir()) == sorted(paths)
    assert tmp_path / "scenario__algo__0__20250101-000000" in paths


def test_save_model__an_interrupted_save_keeps_the_previous_file(tmp_path: Path) -> None:
    """A save that fails half-way leaves the earlier model.zip as it was and no partial file."""

    class Interrupted:
        def save(self, file: BinaryIO) -> None:
            file.write(b"half a zip")
            raise KeyboardInterrupt

    target = tmp_path / "model.zip"
    target.write_bytes(b"the previous model")
    with pytest.raises(KeyboardInterrupt):
        save_model(Interrupted(), target)
    assert target.read_bytes() == b"the previous model"
    assert [path.name for path in tmp_path.iterdir()] == ["model.zip"]
