"""The atomic writer: a failed write leaves the old file whole and no temporary file, and names the file and cause."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from digital_twin import atomic_files
from digital_twin.atomic_files import AtomicBatch, OutputError, atomic_open, write_bytes, write_text


def _fail_fsync_for(monkeypatch: pytest.MonkeyPatch, name: str, code: int = errno.ENOSPC) -> None:
    """``os.fsync`` fails with ``code`` for the temporary file of ``name`` (as a full disk does at the flush)."""
    real = os.fsync

    def fsync(descriptor: int) -> None:
        if Path(os.readlink(f"/proc/self/fd/{descriptor}")).name.startswith(f".{name}."):
            raise OSError(code, os.strerror(code))
        real(descriptor)

    monkeypatch.setattr(atomic_files.os, "fsync", fsync)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd (Linux)")
def test_atomic_open__a_full_disk_leaves_the_old_file_and_names_the_file_and_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC while writing: OutputError naming the file and 'the disk is full'; the old content, no temporary file."""
    target = write_text(tmp_path / "results.json", '{"old": true}\n')
    _fail_fsync_for(monkeypatch, "results.json")
    with pytest.raises(OutputError) as raised:
        write_text(target, '{"new": true}\n' * 1000)
    assert str(raised.value) == (
        f"cannot write {target}: the disk is full (No space left on device); the file there before is unchanged"
    )
    assert raised.value.filename == str(target) and raised.value.errno == errno.ENOSPC
    assert target.read_text() == '{"old": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
    assert not atomic_files.IN_PROGRESS


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd (Linux)")
def test_atomic_batch__files_appear_together_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second file of a batch fails: the first is not replaced either, and no temporary file is left."""
    write_text(tmp_path / "a.md", "old a")
    write_text(tmp_path / "b.png", "old b")
    _fail_fsync_for(monkeypatch, "b.png", errno.EDQUOT)
    with pytest.raises(OutputError, match=r"b\.png: the disk quota is used up"), AtomicBatch() as batch:
        batch.write_text(tmp_path / "a.md", "new a")
        batch.write_bytes(tmp_path / "b.png", b"new b")
    assert (tmp_path / "a.md").read_text() == "old a" and (tmp_path / "b.png").read_text() == "old b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "b.png"]


def test_atomic_open__an_error_in_the_block_keeps_the_old_file(tmp_path: Path) -> None:
    """An exception (an interrupt) while the caller writes: the old file stays, no temporary file is left."""
    target = write_bytes(tmp_path / "model.zip", b"old")
    with pytest.raises(KeyboardInterrupt), atomic_open(target, "wb") as handle:
        handle.write(b"half a")
        raise KeyboardInterrupt
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["model.zip"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_atomic_open__no_permission_names_the_file(tmp_path: Path) -> None:
    """A folder without write permission: OutputError names the file to write, not a temporary name."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(OutputError, match=r"locked/out\.json: no permission to write there"):
            write_text(folder / "out.json", "{}")
    finally:
        folder.chmod(0o700)


def test_atomic_open__keeps_the_permissions_of_the_file_it_replaces(tmp_path: Path) -> None:
    """A replaced file keeps its mode; a new one gets the usual mode (0o666 less the umask), not mkstemp's 0o600."""
    kept = write_text(tmp_path / "kept.txt", "a")
    kept.chmod(0o640)
    write_text(kept, "b")
    assert kept.stat().st_mode & 0o777 == 0o640
    umask = os.umask(0o022)
    os.umask(umask)
    assert write_text(tmp_path / "new.txt", "c").stat().st_mode & 0o777 == 0o666 & ~umask


def test_atomic_open__concurrent_writers_never_leave_a_mixed_file(tmp_path: Path) -> None:
    """Eight threads rewrite one file 50 times each: it is always one writer's whole content, no temporary is left."""
    target = tmp_path / "shared.json"
    bodies = [f"{i}" * 20_000 for i in range(8)]
    seen: set[str] = set()

    def writer(body: str) -> None:
        for _ in range(50):
            write_text(target, body)
            seen.add(target.read_text())

    threads = [threading.Thread(target=writer, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen <= set(bodies) and target.read_text() in bodies
    assert [p.name for p in tmp_path.iterdir()] == ["shared.json"]
